package systemtest_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/llm/llmtest"
)

// uiPage is a page of GET /ai-sdk/chat/{id}/messages.
type uiPage struct {
	Messages []struct {
		ID, Role string
		Parts    []map[string]any
		Metadata struct {
			SessionID string `json:"sessionId"`
			Versions  []struct {
				ID  string
				Seq int
			} `json:"versions"`
			ActiveVersion int `json:"activeVersion"`
		}
	} `json:"messages"`
}

// text is the text of message i of the page.
func (p uiPage) text(i int) string {
	var out []string
	for _, part := range p.Messages[i].Parts {
		if part["type"] == "text" {
			out = append(out, part["text"].(string))
		}
	}
	return strings.Join(out, "")
}

// aiChatHarness is a server whose model answers each call differently,
// with a user signed in to it and helpers to drive a chat as useChat does.
func aiChatHarness(t *testing.T, backend string) (h *harness, alice user, send func(body map[string]any) response, load func() uiPage) {
	h = newHarnessOn(t, backend)
	var n atomic.Int64
	h.model.SetReply(func(req openai.ChatCompletionRequest) llmtest.Response {
		return llmtest.Response{Content: fmt.Sprintf("answer %d", n.Add(1))}
	})
	alice = h.signUp()
	send = func(body map[string]any) response {
		t.Helper()
		r := h.do("POST", "/ai-sdk/chat", alice.token, body)
		h.idle()
		return r
	}
	load = func() uiPage {
		t.Helper()
		var p uiPage
		h.do("GET", "/ai-sdk/chat/c1/messages", alice.token, nil).want(t, 200).decode(t, &p)
		return p
	}
	return h, alice, send, load
}

var helloUI = map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "hello"}}}

// TestAISDKRegenerateLast: useChat's regenerate() without an argument
// sends trigger regenerate-message without a messageId; the last reply
// of the active branch is answered anew, beside the old one. A chat not
// started has nothing to regenerate (404). Both stores.
func TestAISDKRegenerateLast(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		_, _, send, load := aiChatHarness(t, backend)
		regenerate := map[string]any{"id": "c1", "trigger": "regenerate-message", "messages": []any{helloUI}}
		if r := send(regenerate); r.status != 404 {
			t.Errorf("a chat not started: %d %s", r.status, r.body)
		}
		send(map[string]any{"id": "c1", "trigger": "submit-message", "messages": []any{helloUI}}).want(t, 200)
		before := load()
		if len(before.Messages) != 2 {
			t.Fatalf("before: %+v", before)
		}
		r := send(regenerate).want(t, 200)
		if !strings.Contains(string(r.body), `"type":"text-delta"`) || strings.Contains(string(r.body), `"type":"error"`) {
			t.Fatalf("the regeneration's stream: %s", r.body)
		}
		after := load()
		if len(after.Messages) != 2 || after.Messages[0].ID != "u1" || after.Messages[1].ID == before.Messages[1].ID || after.text(1) == before.text(1) {
			t.Errorf("after: %+v (before %+v)", after, before)
		}
		if !strings.Contains(string(r.body), after.Messages[1].ID) {
			t.Errorf("the stream does not start the new reply %s: %s", after.Messages[1].ID, r.body)
		}
	})
}

// TestAISDKVersions: after a regeneration, the loaded reply carries its
// versions (metadata.versions: each one's id and seq, oldest first;
// metadata.activeVersion: the one shown), and an AI SDK app shows another
// with POST /sessions/{metadata.sessionId}/branch {"seq"}: the chat loads
// with that version, which a regenerate() then answers beside. Both stores.
func TestAISDKVersions(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h, alice, send, load := aiChatHarness(t, backend)
		send(map[string]any{"id": "c1", "trigger": "submit-message", "messages": []any{helloUI}}).want(t, 200)
		first := load()
		if v := first.Messages[1].Metadata.Versions; len(v) != 0 {
			t.Errorf("a reply never regenerated has versions: %+v", v)
		}
		regenerate := map[string]any{"id": "c1", "trigger": "regenerate-message", "messages": []any{helloUI}}
		send(regenerate).want(t, 200)
		p := load()
		reply := p.Messages[1]
		if v := reply.Metadata.Versions; len(v) != 2 || v[0].ID != first.Messages[1].ID || v[1].ID != reply.ID || reply.Metadata.ActiveVersion != 1 {
			t.Fatalf("versions after a regeneration: %+v (first reply %s, shown %s)", reply.Metadata, first.Messages[1].ID, reply.ID)
		}
		if v := p.Messages[0].Metadata.Versions; len(v) != 0 {
			t.Errorf("the question has versions: %+v", v)
		}
		older := reply.Metadata.Versions[0]
		h.do("POST", "/sessions/"+reply.Metadata.SessionID+"/branch", alice.token, map[string]any{"seq": older.Seq}).want(t, 200)
		p = load()
		if len(p.Messages) != 2 || p.Messages[1].ID != older.ID || p.text(1) != first.text(1) || p.Messages[1].Metadata.ActiveVersion != 0 {
			t.Fatalf("after switching to the first version: %+v", p)
		}
		send(regenerate).want(t, 200)
		p = load()
		if v := p.Messages[1].Metadata.Versions; len(v) != 3 || p.Messages[1].Metadata.ActiveVersion != 2 || v[2].ID != p.Messages[1].ID {
			t.Errorf("a third version: %+v", p.Messages[1].Metadata)
		}
	})
}
