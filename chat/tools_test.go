package chat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

var weather = chat.Tool{Name: "get_weather", Description: "The weather in a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

// callsWeather makes the fake model ask for one weather call per city the
// last user message names after "weather in", as long as the
// conversation does not end with tool results, or (always) for every turn.
func callsWeather(always bool) func(chat.Request) []history.ToolCall {
	return func(req chat.Request) []history.ToolCall {
		n := len(req.Messages)
		if len(req.Tools) == 0 || req.ToolChoice == chat.ToolChoiceNone || (!always && req.Messages[n-1].Role == history.RoleTool) {
			return nil
		}
		var calls []history.ToolCall
		for i, city := range strings.Split(strings.TrimPrefix(req.Messages[n-1].Content, "weather in "), " and ") {
			calls = append(calls, history.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Type: "function",
				Function: history.FunctionCall{Name: weather.Name, Arguments: fmt.Sprintf(`{"city":%q}`, city)}})
		}
		return calls
	}
}

// results answers each of calls with "sunny in" and its arguments.
func results(calls []history.ToolCall) []chat.ToolResult {
	out := make([]chat.ToolResult, len(calls))
	for i, c := range calls {
		out[i] = chat.ToolResult{ToolCallID: c.ID, Content: "sunny: " + c.Function.Arguments}
	}
	return out
}

// TestToolRound: a turn with tools ends with the model's calls (stored,
// the session awaiting their results, nothing run by the server); the
// app's results continue it, and the model then sees its calls and their
// results, streamed or not.
func TestToolRound(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			w := newWorld(t, chat.Limits{})
			w.model.tools = callsWeather(false)
			var streamed strings.Builder
			req := chat.TurnRequest{Message: "weather in Oslo and Bergen", Tools: []chat.Tool{weather}}
			if stream {
				req.OnDelta = func(s string) { streamed.WriteString(s) }
			}
			asked := w.turn(t, req)
			if asked.Status() != chat.StatusRequiresAction || len(asked.Reply.ToolCalls) != 2 || asked.Reply.Content != "" {
				t.Fatalf("the first turn: status %s, reply %+v", asked.Status(), asked.Reply)
			}
			if got := w.model.last(); len(got.Tools) != 1 || got.Tools[0].Name != weather.Name {
				t.Errorf("the model was offered %+v", got.Tools)
			}
			req = chat.TurnRequest{SessionID: asked.Session.ID, ToolResults: results(asked.Reply.ToolCalls), Tools: []chat.Tool{weather}}
			if stream {
				req.OnDelta = func(s string) { streamed.WriteString(s) }
			}
			done := w.turn(t, req)
			if done.Status() != chat.StatusCompleted || done.Reply.Content != "re: weather in Oslo and Bergen" || done.User.Role != history.RoleTool {
				t.Fatalf("the continuation: status %s, user %+v, reply %+v", done.Status(), done.User, done.Reply)
			}
			sent := w.model.last().Messages
			roles := make([]string, len(sent))
			for i, m := range sent {
				roles[i] = string(m.Role)
			}
			if strings.Join(roles, ",") != "user,assistant,tool,tool" || sent[2].ToolCallID != asked.Reply.ToolCalls[0].ID {
				t.Errorf("the model saw %v", roles)
			}
			msgs, err := stored(w, done.Session.ID)
			if err != nil || len(msgs) != 5 || msgs[4].ParentSeq != msgs[3].Seq {
				t.Fatalf("stored: %d messages %v", len(msgs), err)
			}
			if stream && streamed.String() != done.Reply.Content {
				t.Errorf("streamed %q", streamed.String())
			}
		})
	}
}

// TestToolRoundsBound: replies that keep calling tools are stopped at the
// operator's bound: the next model call may not call any.
func TestToolRoundsBound(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	w.svc.MaxToolRounds = 2
	w.model.tools = callsWeather(true)
	res := w.turn(t, chat.TurnRequest{Message: "weather in Oslo", Tools: []chat.Tool{weather}})
	for round := 1; round <= 2; round++ {
		if res.Status() != chat.StatusRequiresAction {
			t.Fatalf("round %d: %s", round, res.Status())
		}
		res = w.turn(t, chat.TurnRequest{SessionID: res.Session.ID, ToolResults: results(res.Reply.ToolCalls), Tools: []chat.Tool{weather}})
	}
	if res.Status() != chat.StatusCompleted || w.model.last().ToolChoice != chat.ToolChoiceNone {
		t.Errorf("after 2 rounds: %s, tool choice %q", res.Status(), w.model.last().ToolChoice)
	}
	// A new message starts the count again.
	res = w.turn(t, chat.TurnRequest{SessionID: res.Session.ID, Message: "weather in Rome", Tools: []chat.Tool{weather}})
	if res.Status() != chat.StatusRequiresAction {
		t.Errorf("a new question: %s", res.Status())
	}
}

// TestToolResultReplays: results sent again under their key replay the
// continuation; the model is called once.
func TestToolResultReplays(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	w.model.tools = callsWeather(false)
	asked := w.turn(t, chat.TurnRequest{Message: "weather in Oslo and Bergen", Tools: []chat.Tool{weather}})
	req := chat.TurnRequest{SessionID: asked.Session.ID, ToolResults: results(asked.Reply.ToolCalls), ClientMessageID: "results-1"}
	first := w.turn(t, req)
	calls := w.model.calls.Load()
	again := w.turn(t, req)
	if !again.Replayed || again.Reply.ID != first.Reply.ID || w.model.calls.Load() != calls {
		t.Errorf("the retry: replayed %v, reply %s (first %s), model calls %d → %d", again.Replayed, again.Reply.ID, first.Reply.ID, calls, w.model.calls.Load())
	}
	req.ToolResults[0].Content = "rain"
	if _, err := w.svc.Turn(context.Background(), withUser(req)); errs.CodeOf(err) != errs.ECONFLICT {
		t.Errorf("the key with other results: %v", err)
	}
}

// TestToolRetryAfterModelFailure: when the model fails after the results
// are stored, a retry under the same key answers them without storing
// them twice, and the reply answers the last result.
func TestToolRetryAfterModelFailure(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	w.model.tools = callsWeather(false)
	asked := w.turn(t, chat.TurnRequest{Message: "weather in Oslo and Bergen", Tools: []chat.Tool{weather}})
	req := chat.TurnRequest{SessionID: asked.Session.ID, ToolResults: results(asked.Reply.ToolCalls), ClientMessageID: "results-2"}
	w.model.fail = errModelDown
	if _, err := w.svc.Turn(context.Background(), withUser(req)); errs.CodeOf(err) != errs.EUPSTREAM {
		t.Fatalf("with the model down: %v", err)
	}
	w.model.fail = nil
	done := w.turn(t, req)
	msgs, err := stored(w, done.Session.ID)
	if err != nil || len(msgs) != 5 || done.Reply.ParentSeq != msgs[3].Seq || msgs[3].Role != history.RoleTool {
		t.Fatalf("after the retry: %d messages, reply's parent %d, %v", len(msgs), done.Reply.ParentSeq, err)
	}
}

// TestToolRefusals: what a turn with tools or results refuses, and how.
func TestToolRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  func(asked *chat.TurnResult) chat.TurnRequest
		code errs.Code
		says string
	}{
		{"a result for an unknown call", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{SessionID: a.Session.ID, ToolResults: []chat.ToolResult{{ToolCallID: "call_nope", Content: "x"}}}
		}, errs.ECONFLICT, "call_nope"},
		{"results missing one call", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{SessionID: a.Session.ID, ToolResults: results(a.Reply.ToolCalls[:1])}
		}, errs.EINVALID, a1},
		{"a new message while calls await results", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{SessionID: a.Session.ID, Message: "never mind"}
		}, errs.ECONFLICT, a0},
		{"results and a message", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{SessionID: a.Session.ID, Message: "hi", ToolResults: results(a.Reply.ToolCalls)}
		}, errs.EINVALID, "toolResults"},
		{"a result twice", func(a *chat.TurnResult) chat.TurnRequest {
			r := results(a.Reply.ToolCalls)
			return chat.TurnRequest{SessionID: a.Session.ID, ToolResults: append(r, r[0])}
		}, errs.EINVALID, "toolResults[2]"},
		{"a tool without a name", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{Message: "hi", Tools: []chat.Tool{{Name: "no spaces"}}}
		}, errs.EINVALID, "tools[0].name"},
		{"parameters that are not an object", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{Message: "hi", Tools: []chat.Tool{{Name: "f", Parameters: json.RawMessage(`[1]`)}}}
		}, errs.EINVALID, "tools[0].parameters"},
		{"a tool declared twice", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{Message: "hi", Tools: []chat.Tool{weather, weather}}
		}, errs.EINVALID, "tools[1].name"},
		{"too many tools", func(a *chat.TurnResult) chat.TurnRequest {
			tools := make([]chat.Tool, chat.MaxTools+1)
			for i := range tools {
				tools[i] = chat.Tool{Name: fmt.Sprintf("f%d", i)}
			}
			return chat.TurnRequest{Message: "hi", Tools: tools}
		}, errs.EINVALID, "tools: at most"},
		{"a tool choice naming no tool", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{Message: "hi", Tools: []chat.Tool{weather}, ToolChoice: "get_time"}
		}, errs.EINVALID, "toolChoice"},
		{"abandonTools without a message", func(a *chat.TurnResult) chat.TurnRequest {
			return chat.TurnRequest{SessionID: a.Session.ID, AbandonTools: true}
		}, errs.EINVALID, "abandonTools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, chat.Limits{})
			w.model.tools = callsWeather(false)
			asked := w.turn(t, chat.TurnRequest{Message: "weather in Oslo and Bergen", Tools: []chat.Tool{weather}})
			calls := w.model.calls.Load()
			_, err := w.svc.Turn(context.Background(), withUser(tc.req(asked)))
			if errs.CodeOf(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.says) {
				t.Errorf("got %v, want %s saying %q", err, tc.code, tc.says)
			}
			if w.model.calls.Load() != calls {
				t.Errorf("the model was called")
			}
		})
	}
}

// The ids callsWeather gives the first turn's two calls.
const a0, a1 = "call_1_0", "call_1_1"

// TestToolsAbandoned: a message sent with abandonTools records the calls
// awaiting results as not run, and the model sees the whole exchange.
func TestToolsAbandoned(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	w.model.tools = callsWeather(false)
	asked := w.turn(t, chat.TurnRequest{Message: "weather in Oslo and Bergen", Tools: []chat.Tool{weather}})
	res := w.turn(t, chat.TurnRequest{SessionID: asked.Session.ID, Message: "never mind, tell me a joke", AbandonTools: true, ClientMessageID: "joke-1"})
	sent := w.model.last().Messages
	if res.Status() != chat.StatusCompleted || len(sent) != 5 || sent[2].Content != chat.NotRunResult || sent[4].Content != "never mind, tell me a joke" {
		t.Fatalf("the model saw %+v", sent)
	}
	again := w.turn(t, chat.TurnRequest{SessionID: asked.Session.ID, Message: "never mind, tell me a joke", AbandonTools: true, ClientMessageID: "joke-1"})
	if !again.Replayed || again.Reply.ID != res.Reply.ID {
		t.Errorf("the retry did not replay: %+v", again)
	}
}

func withUser(req chat.TurnRequest) chat.TurnRequest {
	req.UserID = "alice"
	return req
}

// stored is the active branch of the session as stored.
func stored(w *world, sessionID string) ([]history.Message, error) {
	_, t, err := w.svc.History.ReadTail(context.Background(), "alice", sessionID)
	if err != nil {
		return nil, err
	}
	return t.Messages, nil
}

// TestToolRoundIndexed: a turn whose reply calls tools gives its question
// and reply to be indexed (the reply, a call, is not searchable), and the
// turn that answers the calls gives every tool result it stored, oldest
// first, with the answer after them.
func TestToolRoundIndexed(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	idx := &fakeIndexer{}
	w.svc.Indexer = idx
	w.model.tools = callsWeather(false)
	asked := w.turn(t, chat.TurnRequest{Message: "weather in Oslo and Bergen", Tools: []chat.Tool{weather}})
	w.turn(t, chat.TurnRequest{SessionID: asked.Session.ID, ToolResults: results(asked.Reply.ToolCalls), Tools: []chat.Tool{weather}})
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if len(idx.batches) != 2 || fmt.Sprint(idx.batches[0]) != "[user:weather in Oslo and Bergen assistant:]" {
		t.Fatalf("indexed %q", idx.batches)
	}
	var want []string
	for _, r := range results(asked.Reply.ToolCalls) {
		want = append(want, "tool:"+r.Content)
	}
	if want = append(want, "assistant:re: weather in Oslo and Bergen"); len(want) != 3 || fmt.Sprint(idx.batches[1]) != fmt.Sprint(want) {
		t.Errorf("the answering turn indexed %q, want %q", idx.batches[1], want)
	}
}
