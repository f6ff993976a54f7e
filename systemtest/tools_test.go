package systemtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
)

// lookupOrder is a tool as an app declares it.
var lookupOrder = map[string]any{"type": "function", "name": "lookup_order", "description": "Looks an order up by its number",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []string{"id"}}}

// ordersModel asks for lookup_order when offered it after a user's
// message, and answers with the tool's result after one.
func ordersModel(req openai.ChatCompletionRequest) llmtest.Response {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == openai.ChatMessageRoleTool:
		return llmtest.Response{Content: "Your order: " + last.Content}
	case len(req.Tools) > 0 && req.ToolChoice != "none":
		return llmtest.Response{ToolCalls: []openai.ToolCall{{ID: "call_" + strings.Fields(last.Content)[0], Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "lookup_order", Arguments: `{"id":"42"}`}}}}
	}
	return llmtest.Echo(req)
}

type toolTurn struct {
	chatResp
	Status    string `json:"status"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct{ Name, Arguments string }
	} `json:"toolCalls"`
}

// TestToolTurn: through POST /chat, a turn offered the app's tools ends
// with the model's calls (status requires_action; nothing run by the
// server); the app's results continue it (a retry under the same key
// replays); a result for an unknown or answered call is 409, a message
// while calls await results 409 naming them; bad tools 400 naming the
// field. Streamed, the calls arrive as a tool_calls event before done.
// Both stores.
func TestToolTurn(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		h.model.SetReply(ordersModel)
		alice := h.signUp()
		var asked toolTurn
		h.do("POST", "/chat", alice.token, map[string]any{"message": "first where is order 42", "tools": []any{lookupOrder}}).want(t, 200).decode(t, &asked)
		if asked.Status != "requires_action" || len(asked.ToolCalls) != 1 || asked.ToolCalls[0].Function.Name != "lookup_order" || asked.ToolCalls[0].Function.Arguments != `{"id":"42"}` {
			t.Fatalf("the first turn: %+v", asked)
		}
		offered := 0
		for _, req := range h.model.Requests() {
			if last := req.Messages[len(req.Messages)-1]; last.Content == "first where is order 42" && len(req.Tools) == 1 && req.Tools[0].Function.Name == "lookup_order" {
				offered++
			}
		}
		if offered != 1 {
			t.Errorf("the model was offered the tool %d times", offered)
		}
		if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": asked.SessionID, "message": "hello?"}); r.status != 409 || !strings.Contains(string(r.body), asked.ToolCalls[0].ID) {
			t.Errorf("a message while a call awaits its result: %d %s", r.status, r.body)
		}
		results := map[string]any{"sessionId": asked.SessionID, "clientMessageId": "results-1", "tools": []any{lookupOrder},
			"toolResults": []any{map[string]any{"toolCallId": asked.ToolCalls[0].ID, "content": "shipped on Monday"}}}
		var done, again toolTurn
		h.do("POST", "/chat", alice.token, results).want(t, 200).decode(t, &done)
		if done.Status != "completed" || done.Reply.Content != "Your order: shipped on Monday" || done.UserMessage.Role != "tool" {
			t.Fatalf("the continuation: %+v", done)
		}
		h.do("POST", "/chat", alice.token, results).want(t, 200).decode(t, &again)
		if !again.Replayed || again.Reply.ID != done.Reply.ID {
			t.Errorf("the retry: %+v", again)
		}
		results["clientMessageId"] = "results-2"
		if r := h.do("POST", "/chat", alice.token, results); r.status != 409 || !strings.Contains(string(r.body), asked.ToolCalls[0].ID) {
			t.Errorf("a result for an answered call: %d %s", r.status, r.body)
		}
		msgs := h.messages(alice.token, asked.SessionID)
		if len(msgs) != 4 || msgs[1].Role != "assistant" || msgs[2].Role != "tool" || msgs[3].ParentSeq != msgs[2].Seq {
			t.Errorf("stored: %+v", msgs)
		}
		for name, body := range map[string]map[string]any{
			"tools[0].name":       {"message": "x", "tools": []any{map[string]any{"name": "has spaces"}}},
			"tools[0].parameters": {"message": "x", "tools": []any{map[string]any{"name": "f", "parameters": []int{1}}}},
			"toolChoice":          {"message": "x", "tools": []any{lookupOrder}, "toolChoice": "other_tool"},
			"toolResults":         {"sessionId": asked.SessionID, "message": "x", "toolResults": []any{map[string]any{"toolCallId": "c", "content": "y"}}},
		} {
			if r := h.do("POST", "/chat", alice.token, body); r.status != 400 || !strings.Contains(string(r.body), name) {
				t.Errorf("%s: %d %s", name, r.status, r.body)
			}
		}

		// Streamed: the calls, then done with the status; the results stream the answer.
		r := doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"message": "second where is order 42", "tools": []any{lookupOrder}, "stream": true}, nil)
		events := readEvents(t, bytes.NewReader(r.body), nil)
		if names := eventNames(events); names != "session,tool_calls,done" {
			t.Fatalf("streamed tool round: %s", names)
		}
		var streamed toolTurn
		json.Unmarshal(events[2].data, &streamed)
		if streamed.Status != "requires_action" || len(streamed.ToolCalls) != 1 {
			t.Fatalf("done: %s", events[2].data)
		}
		r = doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": streamed.SessionID, "stream": true,
			"toolResults": []any{map[string]any{"toolCallId": streamed.ToolCalls[0].ID, "content": "lost in transit"}}}, nil)
		events = readEvents(t, bytes.NewReader(r.body), nil)
		if names := eventNames(events); !strings.HasPrefix(names, "session,delta") || !strings.HasSuffix(names, "done") || !strings.Contains(string(events[len(events)-1].data), "lost in transit") {
			t.Errorf("streamed continuation: %s %s", names, events[len(events)-1].data)
		}
	})
}

func eventNames(events []event) string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = e.name
	}
	return strings.Join(names, ",")
}

// TestToolRoundStopped: the answer that follows tool results streams as
// any reply and can be stopped: it is stored as far as it got, after the
// results, and the session takes the next message.
func TestToolRoundStopped(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.DraftInterval = draftInterval })
		h.model.SetReply(func(req openai.ChatCompletionRequest) llmtest.Response {
			if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
				return llmtest.Response{Content: longReply, ChunkDelay: 20 * time.Millisecond}
			}
			return ordersModel(req)
		})
		alice := h.signUp()
		var asked toolTurn
		h.do("POST", "/chat", alice.token, map[string]any{"message": "first where is order 7", "tools": []any{lookupOrder}}).want(t, 200).decode(t, &asked)
		events, done := streamTurn(t, h.srv.URL, alice.token, map[string]any{"sessionId": asked.SessionID, "clientMessageId": "r-stop",
			"toolResults": []any{map[string]any{"toolCallId": asked.ToolCalls[0].ID, "content": "in the warehouse"}}})
		defer done()
		var start struct {
			ReplyID string `json:"replyId"`
		}
		json.Unmarshal(next(t, events, "session").data, &start)
		next(t, events, "delta")
		h.do("POST", "/sessions/"+asked.SessionID+"/replies/"+start.ReplyID+"/stop", alice.token, nil).want(t, 202)
		var final toolTurn
		json.Unmarshal(next(t, events, "done").data, &final)
		if final.Reply.Metadata.FinishReason != "stopped" || final.Reply.Content == "" || len(final.Reply.Content) >= len(longReply) || final.Status != "completed" {
			t.Fatalf("stopped: %+v", final)
		}
		h.idle()
		msgs := h.messages(alice.token, asked.SessionID)
		if len(msgs) != 4 || msgs[2].Role != "tool" || msgs[3].ParentSeq != msgs[2].Seq || msgs[3].Metadata.FinishReason != "stopped" {
			t.Fatalf("stored: %+v", msgs)
		}
		h.turn(alice.token, map[string]any{"sessionId": asked.SessionID, "message": "thanks"})
	})
}

// TestToolResultsConcurrent: the same results sent five times at once
// under one key (a client retrying on several connections) are stored
// once and answered once; every request gets that answer, at once or
// after waiting as told. Both stores.
func TestToolResultsConcurrent(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		var answers atomic.Int64
		h.model.SetReply(func(req openai.ChatCompletionRequest) llmtest.Response {
			if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
				answers.Add(1)
				return llmtest.Response{Content: "answered once", Delay: 100 * time.Millisecond}
			}
			return ordersModel(req)
		})
		alice := h.signUp()
		var asked toolTurn
		h.do("POST", "/chat", alice.token, map[string]any{"message": "first where is order 9", "tools": []any{lookupOrder}}).want(t, 200).decode(t, &asked)
		body := map[string]any{"sessionId": asked.SessionID, "clientMessageId": "same",
			"toolResults": []any{map[string]any{"toolCallId": asked.ToolCalls[0].ID, "content": "on its way"}}}
		var wg sync.WaitGroup
		replies := make([]string, 5)
		for i := range replies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, _ := h.retrying("POST", "/chat", alice.token, body, 10)
				var got toolTurn
				json.Unmarshal(r.body, &got)
				replies[i] = fmt.Sprint(r.status, " ", got.Reply.ID)
			}()
		}
		wg.Wait()
		for _, r := range replies[1:] {
			if r != replies[0] || !strings.HasPrefix(r, "200 ") {
				t.Errorf("answers %v", replies)
				break
			}
		}
		h.idle()
		msgs := h.messages(alice.token, asked.SessionID)
		if len(msgs) != 4 || answers.Load() != 1 {
			t.Errorf("%d messages stored, the model answered results %d times", len(msgs), answers.Load())
		}
	})
}

// TestToolRoundsBound: a model that keeps calling tools gets its second
// round, and past MAX_TOOL_ROUNDS is asked to answer in text. Both stores.
func TestToolRoundsBound(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.MaxToolRounds = 2 })
		var choices []any
		var mu sync.Mutex
		h.model.SetReply(func(req openai.ChatCompletionRequest) llmtest.Response {
			if len(req.Tools) == 0 {
				return llmtest.Echo(req) // a title
			}
			mu.Lock()
			choices = append(choices, req.ToolChoice)
			mu.Unlock()
			if req.ToolChoice == "none" {
				return llmtest.Response{Content: "enough lookups"}
			}
			return llmtest.Response{ToolCalls: []openai.ToolCall{{ID: fmt.Sprintf("call_%d", len(req.Messages)), Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: "lookup_order", Arguments: `{"id":"1"}`}}}}
		})
		alice := h.signUp()
		var res toolTurn
		h.do("POST", "/chat", alice.token, map[string]any{"message": "look everything up", "tools": []any{lookupOrder}}).want(t, 200).decode(t, &res)
		for round := 1; res.Status == "requires_action"; round++ {
			if round > 3 {
				t.Fatalf("still calling tools after %d rounds", round)
			}
			h.do("POST", "/chat", alice.token, map[string]any{"sessionId": res.SessionID, "tools": []any{lookupOrder},
				"toolResults": []any{map[string]any{"toolCallId": res.ToolCalls[0].ID, "content": "found"}}}).want(t, 200).decode(t, &res)
		}
		mu.Lock()
		defer mu.Unlock()
		if res.Reply.Content != "enough lookups" || fmt.Sprint(choices) != "[<nil> <nil> none]" {
			t.Errorf("ended with %q; tool choices sent %v", res.Reply.Content, choices)
		}
	})
}
