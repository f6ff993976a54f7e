package systemtest_test

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
)

// TestRecallInContext: a session with memory.recall "all" sends the model
// the user's earlier exchanges relevant to the message, marked as recalled
// with their date and session title; "session" looks only in the session
// itself, and never repeats what the context holds already; "off" (the
// default) adds nothing; another user's exchanges are never recalled, nor
// a deleted session's (until it is restored); bad settings are 400.
func TestRecallInContext(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
		alice, bob := h.signUp(), h.signUp()
		pdf := h.newSession(alice.token, map[string]any{"title": "PDF tools"})
		h.turn(alice.token, map[string]any{"sessionId": pdf, "message": "I parse invoices with the pypdf library"})
		h.turn(alice.token, map[string]any{"sessionId": pdf, "message": "Lisbon is lovely in spring"})
		h.turn(bob.token, map[string]any{"message": "bob parses invoices with the secret library"})
		h.idle()
		systemOf := h.systemOf
		all := h.newSession(alice.token, map[string]any{"title": "new", "memory": map[string]any{"recall": "all", "recallK": 2}})
		h.turn(alice.token, map[string]any{"sessionId": all, "message": "which library do I parse invoices with?"})
		sys := systemOf("which library do I parse invoices with?")
		if !strings.Contains(sys, "recalled from the user's earlier conversations") || !strings.Contains(sys, "pypdf") ||
			!strings.Contains(sys, `"PDF tools"`) || !strings.Contains(sys, "2026-03-10") || strings.Contains(sys, "secret") {
			t.Fatalf("recall all: %s", sys)
		}
		// Deleted, the session is never recalled (this turn reads the
		// user's deleted sessions beside its first read, as the instance has
		// seen the session recall from all); restored, it is again.
		// (Room for every candidate: the session's own exchanges are near too.)
		h.do("PATCH", "/sessions/"+all, alice.token, map[string]any{"memory": map[string]any{"recall": "all", "recallK": 10}}).want(t, 200)
		h.do("DELETE", "/sessions/"+pdf, alice.token, nil).want(t, 200)
		h.turn(alice.token, map[string]any{"sessionId": all, "message": "which library parses my invoices?"})
		if sys := systemOf("which library parses my invoices?"); strings.Contains(sys, "pypdf") {
			t.Fatalf("recalled from a deleted session: %s", sys)
		}
		h.do("POST", "/sessions/"+pdf+"/restore", alice.token, nil).want(t, 200)
		h.turn(alice.token, map[string]any{"sessionId": all, "message": "which library parses invoices for me?"})
		if sys := systemOf("which library parses invoices for me?"); !strings.Contains(sys, "pypdf") || !strings.Contains(sys, `"PDF tools"`) {
			t.Fatalf("not recalled once restored: %s", sys)
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

// TestRecallRoundTrips: with recall on, a turn still waits for 2 Firestore
// round trips before the model (its batched read, then its commit): the
// query's embedding runs beside the read (once the instance has seen the
// session recall) and the vector query beside the commit. Recall from all
// sessions reads the user's deleted sessions in that first read, so it
// reads none of the hits' sessions after the query. (Round
// trips are counted one after another by their times, so the claim's
// commit is held until the query is sent, which it can only be if it does
// not wait for the commit.)
func TestRecallRoundTrips(t *testing.T) {
	h := newHarnessOn(t, "firestore", func(c *app.Config) { c.Embeddings = true })
	// The claim's commit and the recall's two queries (by meaning and by
	// words) are each held (up to 2 s) until all three are about to be
	// sent, so that they overlap however the scheduler orders them under
	// load: they can only all be sent if recall does not depend on the
	// commit.
	var armed, counting atomic.Bool // the next commit is held; queries are counted
	var queried chan struct{}
	var queries atomic.Int64
	wait := func() {
		select {
		case <-queried:
		case <-time.After(2 * time.Second):
		}
	}
	h.counter.OnCall = func(method string) {
		switch {
		case strings.HasSuffix(method, "/RunQuery") && counting.Load():
			if n := queries.Add(1); n == 2 {
				close(queried)
			} else if n < 2 {
				wait()
			}
		case strings.HasSuffix(method, "/Commit") && armed.CompareAndSwap(true, false):
			wait()
		}
	}
	var atModel atomic.Value // when the model was called
	h.script(&script{chat: func(r openai.ChatCompletionRequest) llmtest.Response {
		atModel.Store(time.Now())
		return llmtest.Echo(r)
	}})
	for _, tc := range []struct {
		recall string
		depth  int
	}{{"off", 2}, {"session", 2}, {"all", 2}} {
		alice := h.signUp()
		id := h.newSession(alice.token, map[string]any{"title": "recall " + tc.recall,
			"memory": map[string]any{"recall": tc.recall, "strategy": "window", "windowExchanges": 1}})
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "I keep my invoices in a folder called ledger"})
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "Lisbon is lovely in spring"})
		h.idle()
		// Round trips are told one after another by their times, and the
		// scheduler of a loaded machine can start an RPC that was ready
		// beside another after it ended; a recall that waited for the
		// commit would make every try 3 deep, so one try at the depth
		// wanted, of three, shows that it does not.
		var depths []int
		for try, q := range []string{"where do I keep my invoices?", "where are my invoices kept?", "which folder holds my invoices?"} {
			queried = make(chan struct{})
			queries.Store(0)
			armed.Store(tc.recall != "off")
			counting.Store(tc.recall != "off")
			start := time.Now()
			before := h.counter.Snapshot()
			body := h.turn(alice.token, map[string]any{"sessionId": id, "message": q})
			at := atModel.Load().(time.Time)
			rpcs := h.counter.Snapshot().Sub(before).RoundTrips
			h.idle()
			if sys := h.systemOf(q); tc.recall != "off" && !strings.Contains(sys, "ledger") {
				t.Errorf("recall %s: nothing recalled (%v): %s", tc.recall, body, sys)
			}
			d := h.counter.Depth(start, at)
			depths = append(depths, d)
			t.Logf("recall %s, try %d: %d RPCs in the turn, %d one after another before the model", tc.recall, try+1, rpcs, d)
			if d == tc.depth {
				break
			}
		}
		if !slices.Contains(depths, tc.depth) {
			t.Errorf("recall %s: %v round trips one after another before the model, want %d", tc.recall, depths, tc.depth)
		}
	}
}

// systemOf is what the system messages of the last turn that asked
// message said.
func (h *harness) systemOf(message string) string {
	h.t.Helper()
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
	h.t.Fatalf("no model request for %q", message)
	return ""
}

// TestEmbeddingTokensCharged: with recall on, a turn charges its user the
// query's embedding and, in the reply's commit, the exchange's embedding
// (as the tokens of its two messages): the work after the reply writes
// the exchange and nothing more.
func TestEmbeddingTokensCharged(t *testing.T) {
	h := newHarnessOn(t, "firestore", func(c *app.Config) { c.Embeddings = true })
	h.echoWithUsage("Invoices")
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"recall": "session"}})
	words := 0
	for i, msg := range []string{"I keep my invoices in a folder called ledger", "where do I keep my invoices"} {
		h.turn(alice.token, map[string]any{"sessionId": id, "message": msg})
		after := h.counter.Snapshot()
		h.idle()
		// At most the exchange: on a loaded machine the work after the
		// reply may be done before the client has read the reply.
		if d := h.counter.Snapshot().Sub(after); i == 1 && d.Writes > 1 {
			t.Errorf("after the second reply: %d writes, want at most 1 (the exchange)", d.Writes)
		}
		words += len(strings.Fields(msg)) // the test server's embedding usage: its words
	}
	var page struct{ Messages []messageResp }
	h.do("GET", "/sessions/"+id+"/messages?limit=10", alice.token, nil).want(t, 200).decode(t, &page)
	want := 3*107 + words // two replies and a title, the two queries' embeddings
	for _, m := range page.Messages {
		want += m.Tokens // each exchange's embedding, as counted for its messages
	}
	var export struct {
		Usage struct {
			TokensByDay map[string]int `json:"tokensByDay"`
		} `json:"usage"`
	}
	h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &export)
	total := 0
	for _, n := range export.Usage.TokensByDay {
		total += n
	}
	if len(page.Messages) != 4 || total != want {
		t.Errorf("charged %d tokens, want %d (%d messages)", total, want, len(page.Messages))
	}
}
