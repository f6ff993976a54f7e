package systemtest_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/llm/llmtest"
)

// twoCallsModel asks for two lookups after a user's message, and answers
// with their results after them.
func twoCallsModel(req openai.ChatCompletionRequest) llmtest.Response {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == openai.ChatMessageRoleTool {
		return llmtest.Response{Content: "Your orders: " + last.Content}
	}
	call := func(id string) openai.ToolCall {
		return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "lookup_order", Arguments: `{"id":"42"}`}}
	}
	return llmtest.Response{ToolCalls: []openai.ToolCall{call("call_a"), call("call_b")}}
}

// TestToolResultsReplayWholeRequest: a clientMessageId names the whole set
// of tool results it was first sent with. The same set replays; the key
// reused with the second result changed, with one of the two, or with
// them in another order is 409, and nothing more is stored. Both stores.
func TestToolResultsReplayWholeRequest(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		h.model.SetReply(twoCallsModel)
		alice := h.signUp()
		var asked toolTurn
		h.do("POST", "/chat", alice.token, map[string]any{"message": "where are my orders", "tools": []any{lookupOrder}}).want(t, 200).decode(t, &asked)
		if len(asked.ToolCalls) != 2 {
			t.Fatalf("the first turn: %+v", asked)
		}
		a, b := asked.ToolCalls[0].ID, asked.ToolCalls[1].ID
		send := func(results ...[2]string) response {
			list := []any{}
			for _, r := range results {
				list = append(list, map[string]any{"toolCallId": r[0], "content": r[1]})
			}
			return h.do("POST", "/chat", alice.token, map[string]any{"sessionId": asked.SessionID, "clientMessageId": "results-1",
				"tools": []any{lookupOrder}, "toolResults": list})
		}
		var done, again toolTurn
		send([2]string{a, "shipped"}, [2]string{b, "packed"}).want(t, 200).decode(t, &done)
		send([2]string{a, "shipped"}, [2]string{b, "packed"}).want(t, 200).decode(t, &again)
		if !again.Replayed || again.Reply.ID != done.Reply.ID {
			t.Errorf("the same results again: %+v", again)
		}
		for name, results := range map[string][][2]string{
			"the second changed": {{a, "shipped"}, {b, "lost"}},
			"the first alone":    {{a, "shipped"}},
			"in another order":   {{b, "packed"}, {a, "shipped"}},
		} {
			if r := send(results...); r.status != 409 || !strings.Contains(string(r.body), "results-1") {
				t.Errorf("%s: %d %s", name, r.status, r.body)
			}
		}
		if msgs := h.messages(alice.token, asked.SessionID); len(msgs) != 5 {
			t.Errorf("stored %d messages, want 5 (question, calls, two results, answer)", len(msgs))
		}
	})
}
