package functions_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/functions"
)

// TestRecallInContext: a session with memory.recall "all" sends the model
// the user's earlier exchanges relevant to the message, marked as recalled
// with their date and session title; "session" looks only in the session
// itself, and never repeats what the context holds already; "off" (the
// default) adds nothing; another user's exchanges are never recalled; bad
// settings are 400.
func TestRecallInContext(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *functions.Config) { c.Embeddings = true })
		alice, bob := h.signUp(), h.signUp()
		pdf := h.newSession(alice.token, map[string]any{"title": "PDF tools"})
		h.turn(alice.token, map[string]any{"sessionId": pdf, "message": "I parse invoices with the pypdf library"})
		h.turn(alice.token, map[string]any{"sessionId": pdf, "message": "Lisbon is lovely in spring"})
		h.turn(bob.token, map[string]any{"message": "bob parses invoices with the secret library"})
		h.idle()
		systemOf := func(message string) string {
			t.Helper()
			reqs := h.model.Requests()
			for i := len(reqs) - 1; i >= 0; i-- {
				r := reqs[i]
				if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == openai.ChatMessageRoleUser && r.Messages[n-1].Content == message {
					var b strings.Builder
					for _, m := range r.Messages {
						if m.Role == openai.ChatMessageRoleSystem {
							b.WriteString(m.Content + "\n")
						}
					}
					return b.String()
				}
			}
			t.Fatalf("no model request for %q", message)
			return ""
		}
		all := h.newSession(alice.token, map[string]any{"title": "new", "memory": map[string]any{"recall": "all", "recallK": 2}})
		h.turn(alice.token, map[string]any{"sessionId": all, "message": "which library do I parse invoices with?"})
		sys := systemOf("which library do I parse invoices with?")
		if !strings.Contains(sys, "recalled from the user's earlier conversations") || !strings.Contains(sys, "pypdf") ||
			!strings.Contains(sys, `"PDF tools"`) || !strings.Contains(sys, "2026-03-10") || strings.Contains(sys, "secret") {
			t.Fatalf("recall all: %s", sys)
		}
		// In the session itself: what the context holds is not repeated.
		h.do("PATCH", "/sessions/"+pdf, alice.token, map[string]any{"memory": map[string]any{"recall": "session"}}).want(t, 200)
		h.turn(alice.token, map[string]any{"sessionId": pdf, "message": "which library for invoices again?"})
		if sys := systemOf("which library for invoices again?"); strings.Contains(sys, "recalled") {
			t.Fatalf("recall repeated the window: %s", sys)
		}
		off := h.newSession(alice.token, map[string]any{"title": "off"})
		h.turn(alice.token, map[string]any{"sessionId": off, "message": "which library for invoices, off?"})
		if sys := systemOf("which library for invoices, off?"); strings.Contains(sys, "recalled") {
			t.Fatalf("recall off: %s", sys)
		}
		for _, bad := range []map[string]any{{"recall": "sometimes"}, {"recall": "all", "recallK": 11}, {"recallTokens": 4001}, {"recallK": -1}} {
			if r := h.do("POST", "/sessions", alice.token, map[string]any{"memory": bad}); r.status != 400 {
				t.Errorf("%v: %d %s", bad, r.status, r.body)
			}
		}
	})
}
