package systemtest_test

import (
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestToolOutputPruning: old tool results reach the model as stubs naming
// the call (the call and its id kept), the context endpoint lists them,
// the stored messages stay whole; memory.toolOutputs sets the rules and
// rejects what is out of range.
func TestToolOutputPruning(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice := h.signUp()
		id := h.newSession(alice.token, map[string]any{"title": "agent", "memory": map[string]any{"toolOutputs": map[string]any{"keepLast": 1, "maxTokens": 0}}})
		page := strings.Repeat("lorem ipsum dolor ", 200)
		var batch []map[string]any
		for i := range 3 {
			call := fmt.Sprintf("call_%d", i)
			batch = append(batch,
				map[string]any{"role": "user", "content": fmt.Sprintf("fetch page %d", i)},
				map[string]any{"role": "assistant", "toolCalls": []map[string]any{{"id": call, "type": "function", "function": map[string]any{"name": "fetch_page", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "toolCallId": call, "content": page},
				map[string]any{"role": "assistant", "content": fmt.Sprintf("page %d read", i)})
		}
		h.do("POST", "/sessions/"+id+"/messages", alice.token, map[string]any{"messages": batch}).want(t, 201)

		var ctx struct {
			Messages []openai.ChatCompletionMessage
			Pruned   []struct {
				Seq        int
				ToolCallID string
				Name       string
				Tokens     int
			}
		}
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &ctx)
		if len(ctx.Pruned) != 2 || ctx.Pruned[0].ToolCallID != "call_0" || ctx.Pruned[1].ToolCallID != "call_1" || ctx.Pruned[0].Name != "fetch_page" || ctx.Pruned[0].Tokens < 600 {
			t.Fatalf("pruned: %+v", ctx.Pruned)
		}
		stubs, whole := 0, 0
		for _, m := range ctx.Messages {
			if m.Role != openai.ChatMessageRoleTool {
				continue
			}
			switch {
			case strings.HasPrefix(m.Content, "[tool output pruned: ") && strings.HasSuffix(m.Content, " tokens; call fetch_page]"):
				stubs++
			case m.Content == page && m.ToolCallID == "call_2":
				whole++
			}
		}
		if stubs != 2 || whole != 1 {
			t.Fatalf("context messages: %d stubs, %d whole results", stubs, whole)
		}
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "summarize the pages"})
		reqs := h.model.Requests()
		sent := reqs[len(reqs)-1]
		for _, m := range reqs {
			if n := len(m.Messages); n > 0 && m.Messages[n-1].Content == "summarize the pages" {
				sent = m
			}
		}
		if n := strings.Count(fmt.Sprint(sent.Messages), "[tool output pruned"); n != 2 {
			t.Errorf("the model got %d stubs, want 2", n)
		}
		for _, m := range h.messages(alice.token, id) {
			if m.Role == "tool" && m.Content != page {
				t.Fatalf("a stored tool result changed: %.80q", m.Content)
			}
		}
		for _, bad := range []map[string]any{{"keepLast": -1}, {"maxTokens": 1_000_001}, {"keepLast": 1, "other": 2}} {
			h.do("POST", "/sessions", alice.token, map[string]any{"memory": map[string]any{"toolOutputs": bad}}).want(t, 400)
		}
	})
}
