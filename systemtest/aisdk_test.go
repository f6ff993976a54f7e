package systemtest_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAISDKEdge: the AI SDK's endpoints answer bad requests 400 naming the
// field before any stream, a chat not started yet has no messages, nothing
// in progress is 204 to resume and 404 to stop, and a turn's stream is the
// UI message stream whose reply then loads under the client's ids. Both
// stores. (The SDK's own client is driven in web/e2e/aisdk.test.mjs.)
func TestAISDKEdge(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice := h.signUp()
		user := func(id, text string) map[string]any {
			return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
		}
		for field, body := range map[string]map[string]any{
			"trigger":  {"id": "c1", "messages": []any{user("u1", "hi")}, "trigger": "send"},
			"id":       {"id": "a/b", "messages": []any{user("u1", "hi")}, "trigger": "submit-message"},
			"messages": {"id": "c1", "messages": []any{}, "trigger": "submit-message"},
			"role":     {"id": "c1", "messages": []any{map[string]any{"id": "s", "role": "system", "parts": []any{}}}, "trigger": "submit-message"},
			"content":  {"id": "c1", "messages": []any{user("u1", "  ")}, "trigger": "submit-message"},
			"extra":    {"id": "c1", "messages": []any{user("u1", "hi")}, "trigger": "submit-message", "extra": 1},
			"].id":     {"id": "c1", "messages": []any{user("has spaces in it", "hi")}, "trigger": "submit-message"},
		} {
			if r := h.do("POST", "/ai-sdk/chat", alice.token, body); r.status != 400 || !strings.Contains(string(r.body), field) {
				t.Errorf("%s: %d %s", field, r.status, r.body)
			}
		}
		var page struct {
			Messages []struct {
				ID, Role string
				Parts    []map[string]any
			} `json:"messages"`
			NextPageToken string `json:"nextPageToken"`
		}
		h.do("GET", "/ai-sdk/chat/c1/messages", alice.token, nil).want(t, 200).decode(t, &page)
		if len(page.Messages) != 0 {
			t.Errorf("a chat not started: %+v", page)
		}
		h.do("GET", "/ai-sdk/chat/c1/stream", alice.token, nil).want(t, 204)
		h.do("POST", "/ai-sdk/chat/c1/stop", alice.token, nil).want(t, 404)

		r := h.do("POST", "/ai-sdk/chat", alice.token, map[string]any{"id": "c1", "messages": []any{user("client-u1", "hello")}, "trigger": "submit-message"}).want(t, 200)
		if r.header.Get("X-Vercel-AI-UI-Message-Stream") != "v1" || !bytes.HasSuffix(r.body, []byte("data: [DONE]\n\n")) {
			t.Fatalf("stream: %v %s", r.header, r.body)
		}
		var types []string
		for _, line := range strings.Split(string(r.body), "\n") {
			var c struct{ Type string }
			if data, ok := strings.CutPrefix(line, "data: {"); ok && json.Unmarshal([]byte("{"+data), &c) == nil {
				types = append(types, c.Type)
			}
		}
		if got := strings.Join(types, ","); !strings.HasPrefix(got, "start,start-step,text-start,text-delta") || !strings.HasSuffix(got, "text-end,finish-step,finish") {
			t.Errorf("chunks %s", got)
		}
		h.idle()
		h.do("GET", "/ai-sdk/chat/c1/messages?limit=1", alice.token, nil).want(t, 200).decode(t, &page)
		if len(page.Messages) != 1 || page.Messages[0].Role != "assistant" || page.NextPageToken == "" {
			t.Fatalf("the newest page: %+v", page)
		}
		h.do("GET", "/ai-sdk/chat/c1/messages?pageToken="+page.NextPageToken, alice.token, nil).want(t, 200).decode(t, &page)
		if len(page.Messages) != 1 || page.Messages[0].ID != "client-u1" || page.Messages[0].Parts[0]["text"] != "hello" {
			t.Errorf("the older page: %+v", page)
		}
	})
}
