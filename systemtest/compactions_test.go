package systemtest_test

import (
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
)

// appendExchanges appends n exchanges of about 60 tokens each to a session.
func (h *harness) appendExchanges(token, id string, from, n int) {
	h.t.Helper()
	for i := from; i < from+n; i++ {
		h.do("POST", "/sessions/"+id+"/messages", token, map[string]any{"messages": []map[string]any{
			{"role": "user", "content": fmt.Sprintf("question %d: %s", i, strings.Repeat("words about the plan ", 12))},
			{"role": "assistant", "content": fmt.Sprintf("answer %d: %s", i, strings.Repeat("more words on the plan ", 12))}}}).want(h.t, 201)
	}
}

type contextDue struct {
	Compaction *struct {
		EndSeq  int
		Summary string
		Model   string
	}
	CompactionDue *struct{ FromSeq, ToSeq int }
	Messages      []openai.ChatCompletionMessage
}

// TestAppendedHistoryIsSummarized: an app that appends its own exchanges
// gets summaries as chat turns do (the server's model makes them after the
// append's answer), and the context says when one is due.
func TestAppendedHistoryIsSummarized(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		var summaries int
		h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
			if r.Messages[0].Content == prompts.Summary {
				summaries++
				return llmtest.Response{Content: "They planned things."}
			}
			return llmtest.Echo(r)
		})
		alice := h.signUp()
		id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"budgetTokens": 1500}})
		h.appendExchanges(alice.token, id, 0, 20)
		h.idle()
		var c contextDue
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		if summaries == 0 || c.Compaction == nil || c.Compaction.Summary != "They planned things." || !strings.Contains(c.Messages[1].Content, "They planned things.") {
			t.Fatalf("%d summaries; context compaction %+v", summaries, c.Compaction)
		}
		// With the default budget (most of the model's context size), many short
		// messages fill the tail document's bytes first: a summary is made
		// before they would leave it unsummarized.
		long := h.newSession(alice.token, nil)
		text := " " + strings.Repeat("-", 1020) // 1 KiB that counts about 30 tokens: far under the budget
		for i := 0; i < 120; i++ {
			h.do("POST", "/sessions/"+long+"/messages", alice.token, map[string]any{"messages": []map[string]any{
				{"role": "user", "content": fmt.Sprint(i, text)}, {"role": "assistant", "content": fmt.Sprint(i, text)}}}).want(t, 201)
		}
		h.idle()
		h.do("GET", "/sessions/"+long+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		if c.Compaction == nil {
			t.Fatalf("240 messages of 1 KiB (about 7,000 tokens) under the default budget: no summary")
		}
	})
}

// TestRecordCompaction: with memory.summaries "app" the server makes no
// summary; the context says when one is due; the app stores the summary
// its own model made and the next context uses it; the same summary again
// replays, another conflicts; bad ranges, summaries and strategies are
// 400; another user's session 404; the callable does the same.
func TestRecordCompaction(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice, bob := h.signUp(), h.signUp()
		id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"budgetTokens": 1500, "summaries": "app"}})
		h.appendExchanges(alice.token, id, 0, 20)
		h.idle()
		var c contextDue
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		if c.Compaction != nil || c.CompactionDue == nil || c.CompactionDue.FromSeq != 0 || c.CompactionDue.ToSeq < 1 {
			t.Fatalf("before: compaction %+v, due %+v", c.Compaction, c.CompactionDue)
		}
		for _, r := range h.model.Requests() {
			if r.Messages[0].Content == prompts.Summary {
				t.Fatal("the server summarized a session whose app makes its summaries")
			}
		}
		due := *c.CompactionDue
		path := "/sessions/" + id + "/compactions"
		body := map[string]any{"fromSeq": due.FromSeq, "toSeq": due.ToSeq, "summary": "The app's own summary."}
		var rec struct {
			ID       string
			StartSeq int
			EndSeq   int
			Model    string
		}
		h.do("POST", path, alice.token, body).want(t, 201).decode(t, &rec)
		if rec.EndSeq != due.ToSeq || rec.Model != "client" {
			t.Fatalf("recorded: %+v", rec)
		}
		h.do("POST", path, alice.token, body).want(t, 200)
		h.do("POST", path, alice.token, map[string]any{"fromSeq": due.FromSeq, "toSeq": due.ToSeq, "summary": "Another."}).want(t, 409)
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		if c.Compaction == nil || c.Compaction.EndSeq != due.ToSeq || !strings.Contains(c.Messages[1].Content, "The app's own summary.") {
			t.Fatalf("after: compaction %+v, messages %.200v", c.Compaction, c.Messages)
		}
		next := due.ToSeq + 1
		for name, bad := range map[string]map[string]any{
			"a gap":           {"fromSeq": next + 1, "toSeq": next + 5, "summary": "x"},
			"covered already": {"fromSeq": 0, "toSeq": due.ToSeq - 2, "summary": "x"},
			"the newest":      {"fromSeq": next, "toSeq": 39, "summary": "x"},
			"not stored":      {"fromSeq": next, "toSeq": 400, "summary": "x"},
			"empty":           {"fromSeq": next, "toSeq": next + 1, "summary": "  "},
			"too long":        {"fromSeq": next, "toSeq": next + 1, "summary": strings.Repeat("x", 8001)},
			"no range":        {"summary": "x"},
			"unknown field":   {"fromSeq": next, "toSeq": next + 1, "summary": "x", "other": 1},
		} {
			if r := h.do("POST", path, alice.token, bad); r.status != 400 {
				t.Errorf("%s: %d %s", name, r.status, r.body)
			}
		}
		h.do("POST", path, bob.token, map[string]any{"fromSeq": next, "toSeq": next + 1, "summary": "x"}).want(t, 404)
		// Two exchanges more, so that next+1 is not the newest message
		// however little the due summary left verbatim.
		h.appendExchanges(alice.token, id, 20, 2)
		var via struct{ Result struct{ EndSeq int } }
		h.do("POST", "/callable/recordCompaction", alice.token, map[string]any{"data": map[string]any{"sessionId": id, "fromSeq": next, "toSeq": next + 1, "summary": "More."}}).
			want(t, 200).decode(t, &via)
		if via.Result.EndSeq != next+1 {
			t.Errorf("callable: %+v", via)
		}
		window := h.newSession(alice.token, map[string]any{"memory": map[string]any{"strategy": "window"}})
		h.appendExchanges(alice.token, window, 0, 2)
		h.do("POST", "/sessions/"+window+"/compactions", alice.token, map[string]any{"fromSeq": 0, "toSeq": 1, "summary": "x"}).want(t, 400)
	})
}
