package systemtest_test

import (
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
)

// TestSmallBudgetReservesTheBlockItHolds: with long-term memory on and an
// empty memory block, a summary is planned against the block as it is
// (nothing), not its 2,000-token cap: at a budget of 1,200 tokens, a short
// exchange is not "due" in GET …/context, and short appends under server
// summaries call no summary model; once the history outgrows the budget,
// both do. Both stores.
func TestSmallBudgetReservesTheBlockItHolds(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory = true })
		var summaries atomic.Int32
		h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
			if r.Messages[0].Content == prompts.Summary {
				summaries.Add(1)
				return llmtest.Response{Content: "They talked."}
			}
			return llmtest.Echo(r)
		})
		alice := h.signUp()
		short := []map[string]any{{"role": "user", "content": "Hi there."}, {"role": "assistant", "content": "Hello! How can I help?"}}

		app := h.newSession(alice.token, map[string]any{"memory": map[string]any{"strategy": "summary_buffer", "summaries": "app", "budgetTokens": 1200}})
		h.do("POST", "/sessions/"+app+"/messages", alice.token, map[string]any{"messages": short}).want(t, 201)
		var c contextDue
		h.do("GET", "/sessions/"+app+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		if c.CompactionDue != nil {
			t.Errorf("one short exchange at 1,200 tokens: compactionDue %+v", *c.CompactionDue)
		}

		server := h.newSession(alice.token, map[string]any{"memory": map[string]any{"strategy": "summary_buffer", "budgetTokens": 1200}})
		for range 3 {
			h.do("POST", "/sessions/"+server+"/messages", alice.token, map[string]any{"messages": short}).want(t, 201)
		}
		h.idle()
		if summaries.Load() != 0 {
			t.Errorf("three short appends at 1,200 tokens made %d summaries", summaries.Load())
		}

		// Past the budget, a summary is due on both paths.
		h.appendExchanges(alice.token, app, 0, 25)
		h.do("GET", "/sessions/"+app+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		if c.CompactionDue == nil {
			t.Errorf("25 long exchanges at 1,200 tokens: no compactionDue")
		}
		h.appendExchanges(alice.token, server, 0, 25)
		h.idle()
		if summaries.Load() == 0 {
			t.Errorf("25 long exchanges at 1,200 tokens under server summaries: no summary")
		}
	})
}
