package systemtest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/prompts"
)

// TestLongTermMemory: what alice tells one session reaches her next
// session's prompt, never bob's prompt or export; the endpoints show, edit,
// switch off and forget it.
func TestLongTermMemory(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.LongTermMemory = true })
	var extractions atomic.Int64
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		switch r.Messages[0].Content {
		case prompts.Extract:
			extractions.Add(1)
			if strings.Contains(r.Messages[1].Content, "vegetarian") {
				return llmtest.Response{Content: `{"profile":{"work":"Runs a bakery.","personal":null,"focus":null},"facts":[{"content":"The user is vegetarian.","category":"preference","confidence":0.95}]}`}
			}
			return llmtest.Response{Content: `{"profile":null,"facts":[]}`}
		case prompts.Resolve:
			return llmtest.Response{Content: `{"decisions":[]}`}
		}
		return llmtest.Echo(r)
	})
	alice, bob := h.signUp(), h.signUp()
	var c chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "I run a bakery and I'm vegetarian."}).want(t, 200).decode(t, &c)
	for i := 0; i < 2; i++ {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": c.SessionID, "message": fmt.Sprint("more ", i)}).want(t, 200)
	}
	for i := 0; i < 6; i++ { // bob chats too, in his own session
		h.do("POST", "/chat", bob.token, map[string]any{"message": fmt.Sprint("bob here ", i)}).want(t, 200)
	}
	h.idle()
	// Alice: 6 messages in one session → one extraction; bob: 6 sessions of
	// 2 messages → none (fewer than K per session).
	if n := extractions.Load(); n != 1 {
		t.Errorf("%d extractions, want 1", n)
	}
	var v longterm.View
	h.do("GET", "/memory", alice.token, nil).want(t, 200).decode(t, &v)
	if !v.Enabled || len(v.Facts) != 1 || v.Facts[0].Content != "The user is vegetarian." || v.Profile.Work.Text != "Runs a bakery." || v.BlockTokens == 0 {
		t.Fatalf("alice's memory: %+v", v)
	}
	// A new session of alice's starts with her memory in the prompt.
	h.do("POST", "/chat", alice.token, map[string]any{"message": "What should I cook tonight?"}).want(t, 200)
	reqs := h.turnRequests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) < 3 || !strings.HasPrefix(last.Messages[1].Content, prompts.MemoryHeader) || !strings.Contains(last.Messages[1].Content, "vegetarian") {
		t.Errorf("alice's prompt: %+v", last.Messages)
	}
	var ctxResp struct {
		Messages []openai.ChatCompletionMessage
	}
	h.do("GET", "/sessions/"+c.SessionID+"/context", alice.token, nil).want(t, 200).decode(t, &ctxResp)
	if !strings.Contains(ctxResp.Messages[1].Content, "vegetarian") {
		t.Errorf("the context endpoint lacks the memory block")
	}
	// Never in bob's prompt, memory or export.
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "bob here") && strings.Contains(string(b), "vegetarian") {
			t.Errorf("alice's memory in bob's prompt")
		}
	}
	h.do("GET", "/memory", bob.token, nil).want(t, 200).decode(t, &v)
	if len(v.Facts) != 0 || v.Profile.Work.Text != "" {
		t.Errorf("bob's memory: %+v", v)
	}
	if r := h.do("GET", "/account/export", bob.token, nil).want(t, 200); strings.Contains(string(r.body), "vegetarian") || strings.Contains(string(r.body), "bakery") {
		t.Errorf("alice's memory in bob's export")
	}
	if r := h.do("GET", "/account/export", alice.token, nil).want(t, 200); !strings.Contains(string(r.body), `"memory":`) || !strings.Contains(string(r.body), "vegetarian") {
		t.Errorf("alice's export lacks her memory")
	}

	// Edit, switch off, forget.
	h.do("GET", "/memory", alice.token, nil).want(t, 200).decode(t, &v)
	factID := v.Facts[0].ID
	if r := h.do("DELETE", "/memory/facts/"+factID, bob.token, nil); r.status != 404 {
		t.Errorf("bob forgets alice's fact: %d", r.status)
	}
	h.do("PATCH", "/memory/profile", alice.token, map[string]any{"focus": "Opening a second shop."}).want(t, 200).decode(t, &v)
	if v.Profile.Focus.Text != "Opening a second shop." || v.Profile.Work.Text != "Runs a bakery." {
		t.Errorf("profile after PATCH: %+v", v.Profile)
	}
	for _, bad := range []string{`{"mood":"x"}`, `{}`, `{"focus":5}`} {
		if r := h.do("PATCH", "/memory/profile", alice.token, bad); r.status != 400 {
			t.Errorf("PATCH /memory/profile %s: %d", bad, r.status)
		}
	}
	h.do("PATCH", "/memory", alice.token, map[string]any{"enabled": false}).want(t, 200).decode(t, &v)
	if v.Enabled {
		t.Errorf("still enabled")
	}
	h.do("POST", "/chat", alice.token, map[string]any{"message": "Anything?"}).want(t, 200)
	reqs = h.turnRequests()
	if last := reqs[len(reqs)-1]; strings.Contains(fmt.Sprint(last.Messages), "vegetarian") {
		t.Errorf("memory off, yet in the prompt")
	}
	h.do("PATCH", "/memory", alice.token, map[string]any{"enabled": true}).want(t, 200)
	if r := h.do("DELETE", "/memory/facts/"+factID, alice.token, nil); r.status != 204 {
		t.Errorf("forget: %d %s", r.status, r.body)
	}
	h.do("DELETE", "/memory", alice.token, nil)
	h.do("GET", "/memory", alice.token, nil).want(t, 200).decode(t, &v)
	if len(v.Facts) != 0 || v.Profile.Focus.Text != "" || !v.Enabled {
		t.Errorf("after forgetting everything: %+v", v)
	}
	for _, ep := range []struct{ m, p string }{{"GET", "/memory"}, {"PATCH", "/memory"}, {"DELETE", "/memory"}, {"PATCH", "/memory/profile"}, {"DELETE", "/memory/facts/x"}} {
		if r := h.do(ep.m, ep.p, "", map[string]any{}); r.status != 401 {
			t.Errorf("%s %s without a token: %d", ep.m, ep.p, r.status)
		}
	}
}

// turnRequests returns the chat turns' model requests: those that open with
// the turn's system prompt (titles, summaries and extractions, which arrive
// after the reply in any order, do not).
func (h *harness) turnRequests() []openai.ChatCompletionRequest {
	var out []openai.ChatCompletionRequest
	for _, r := range h.model.Requests() {
		if r.Messages[0].Content == testConfig().SystemPrompt {
			out = append(out, r)
		}
	}
	return out
}
