package systemtest_test

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
	openai "github.com/sashabaranov/go-openai"
)

// TestSessionInstructions: a session's instructions, set at creation or
// with PATCH (and removed with ""), are shown in the session, exported,
// and sent to the model as a system message after the operator's prompt,
// which stays first; changes apply from the next turn; too long, or any
// on a server that takes none, is 400 naming the field. Both stores.
func TestSessionInstructions(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.InstructionsChars = 100 })
		alice := h.signUp()
		var s struct {
			ID           string `json:"id"`
			Instructions string `json:"instructions"`
		}
		h.do("POST", "/sessions", alice.token, map[string]any{"instructions": "  Answer as a pirate.  "}).want(t, 201).decode(t, &s)
		if s.Instructions != "Answer as a pirate." {
			t.Fatalf("created with instructions %q", s.Instructions)
		}
		systems := func(message string) []string {
			t.Helper()
			var out []string
			for _, r := range h.model.Requests() {
				if last := r.Messages[len(r.Messages)-1]; last.Role == openai.ChatMessageRoleUser && last.Content == message {
					for _, m := range r.Messages {
						if m.Role == openai.ChatMessageRoleSystem {
							out = append(out, m.Content)
						}
					}
				}
			}
			return out
		}
		h.turn(alice.token, map[string]any{"sessionId": s.ID, "message": "hello"})
		if got := systems("hello"); len(got) < 2 || got[0] != "You are a test assistant." || got[1] != "Answer as a pirate." {
			t.Fatalf("system messages %q", got)
		}
		h.do("PATCH", "/sessions/"+s.ID, alice.token, map[string]any{"instructions": "Answer in French."}).want(t, 200).decode(t, &s)
		h.turn(alice.token, map[string]any{"sessionId": s.ID, "message": "again"})
		if got := systems("again"); len(got) < 2 || got[1] != "Answer in French." || s.Instructions != "Answer in French." {
			t.Fatalf("after PATCH: %q, session %q", got, s.Instructions)
		}
		var export struct {
			Sessions []struct {
				Session struct{ Instructions string } `json:"session"`
			} `json:"sessions"`
		}
		h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &export)
		if len(export.Sessions) != 1 || export.Sessions[0].Session.Instructions != "Answer in French." {
			t.Errorf("export: %+v", export.Sessions)
		}
		s.Instructions = "" // absent when there are none
		h.do("PATCH", "/sessions/"+s.ID, alice.token, map[string]any{"instructions": ""}).want(t, 200).decode(t, &s)
		h.turn(alice.token, map[string]any{"sessionId": s.ID, "message": "plain"})
		if got := systems("plain"); len(got) != 1 || s.Instructions != "" {
			t.Errorf("removed: %q, session %q", got, s.Instructions)
		}
		for name, body := range map[string]map[string]any{
			"too long": {"instructions": strings.Repeat("x", 101)},
			"not text": {"instructions": 7},
		} {
			if r := h.do("POST", "/sessions", alice.token, body); r.status != 400 || !strings.Contains(string(r.body), "instructions") {
				t.Errorf("%s: %d %s", name, r.status, r.body)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		h := newHarnessOn(t, "memory")
		alice := h.signUp()
		if r := h.do("POST", "/sessions", alice.token, map[string]any{"instructions": "Be brief."}); r.status != 400 || !strings.Contains(string(r.body), "SESSION_INSTRUCTIONS_MAX_CHARS") {
			t.Errorf("instructions on a server that takes none: %d %s", r.status, r.body)
		}
	})
}
