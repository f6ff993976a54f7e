package systemtest_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
)

type searchResp struct {
	Results []struct {
		SessionID    string  `json:"sessionId"`
		SessionTitle string  `json:"sessionTitle"`
		MessageID    string  `json:"messageId"`
		Seq          int     `json:"seq"`
		Role         string  `json:"role"`
		Snippet      string  `json:"snippet"`
		Score        float64 `json:"score"`
		Exact        bool    `json:"exact"`
	} `json:"results"`
}

// TestSearch: every chat turn's exchange is embedded after its reply;
// GET /search finds the caller's own exchanges by meaning and by exact
// phrase (an exact phrase first), across sessions or in one, never
// another user's or a deleted session's; bad input is 400; the callable
// protocol answers the same.
func TestSearch(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
		alice, bob := h.signUp(), h.signUp()
		pdf := h.turn(alice.token, map[string]any{"message": "Which PDF library should I use for parsing invoices?"}).SessionID
		h.turn(alice.token, map[string]any{"sessionId": pdf, "message": "What is the capital of Norway?"})
		hike := h.turn(alice.token, map[string]any{"message": "Recommend a hiking trail near Oslo in autumn"}).SessionID
		h.turn(bob.token, map[string]any{"message": "my secret PDF library notes"})
		h.idle()
		search := func(token string, params url.Values, status int) searchResp {
			t.Helper()
			var r searchResp
			resp := h.do("GET", "/search?"+params.Encode(), token, nil).want(t, status)
			if status == 200 {
				resp.decode(t, &r)
			}
			return r
		}
		r := search(alice.token, url.Values{"q": {"PDF library"}}, 200)
		if len(r.Results) == 0 || r.Results[0].SessionID != pdf || !r.Results[0].Exact || r.Results[0].Role != "user" ||
			!strings.Contains(r.Results[0].Snippet, "PDF library") || r.Results[0].MessageID == "" {
			t.Fatalf("an exact phrase: %+v", r.Results)
		}
		for _, x := range r.Results {
			if strings.Contains(x.Snippet, "secret") {
				t.Fatalf("bob's exchange in alice's results: %+v", x)
			}
		}
		r = search(alice.token, url.Values{"q": {"trail for hiking"}}, 200)
		if len(r.Results) == 0 || r.Results[0].SessionID != hike || r.Results[0].Exact {
			t.Fatalf("by meaning: %+v", r.Results)
		}
		r = search(alice.token, url.Values{"q": {"Oslo Norway"}, "sessionId": {pdf}, "limit": {"5"}}, 200)
		if len(r.Results) != 1 || !strings.Contains(r.Results[0].Snippet, "Norway") { // the PDF exchange shares nothing with the query
			t.Fatalf("in one session: %+v", r.Results)
		}
		for _, x := range r.Results {
			if x.SessionID != pdf {
				t.Fatalf("another session's result: %+v", x)
			}
		}
		if r := search(alice.token, url.Values{"q": {"Oslo"}, "limit": {"1"}}, 200); len(r.Results) != 1 {
			t.Fatalf("limit 1: %+v", r.Results)
		}
		// An app's own exchanges (the memory path) are embedded too, after
		// the append's answer, without changing the version it returned.
		own := h.newSession(alice.token, map[string]any{"title": "own model"})
		var ctxResp struct{ Version string }
		h.do("GET", "/sessions/"+own+"/context", alice.token, nil).want(t, 200).decode(t, &ctxResp)
		var app struct{ Version string }
		h.do("POST", "/sessions/"+own+"/messages", alice.token, map[string]any{"ifMatch": ctxResp.Version, "messages": []map[string]any{
			{"role": "user", "content": "Which telescope suits a beginner astronomer?"},
			{"role": "assistant", "content": "A six inch Dobsonian telescope is the classic first scope."}}}).want(t, 201).decode(t, &app)
		h.idle()
		h.do("POST", "/sessions/"+own+"/messages", alice.token, map[string]any{"ifMatch": app.Version, "messages": []map[string]any{
			{"role": "user", "content": "thanks"}}}).want(t, 201)
		h.idle()
		if r := search(alice.token, url.Values{"q": {"beginner telescope"}}, 200); len(r.Results) == 0 || r.Results[0].SessionID != own {
			t.Fatalf("an appended exchange: %+v", r.Results)
		}
		// A deleted session is not searched.
		h.do("DELETE", "/sessions/"+hike, alice.token, nil).want(t, 200)
		for _, x := range search(alice.token, url.Values{"q": {"hiking trail"}}, 200).Results {
			if x.SessionID == hike {
				t.Fatalf("a deleted session's result: %+v", x)
			}
		}
		// Bad input, and no user.
		for _, bad := range []url.Values{{}, {"q": {"  "}}, {"q": {"x"}, "limit": {"0"}}, {"q": {"x"}, "limit": {"51"}},
			{"q": {"x"}, "limit": {"ten"}}, {"q": {strings.Repeat("é", 501)}}, {"q": {"x"}, "sessionId": {"../bad"}}} {
			if r := h.do("GET", "/search?"+bad.Encode(), alice.token, nil); r.status != 400 {
				t.Errorf("%v: %d %s", bad, r.status, r.body)
			}
		}
		h.do("GET", "/search?q=x", "", nil).want(t, 401)
		// The callable protocol.
		var c struct {
			Result searchResp `json:"result"`
		}
		h.do("POST", "/callable/search", alice.token, map[string]any{"data": map[string]any{"q": "PDF library", "limit": 3}}).want(t, 200).decode(t, &c)
		if len(c.Result.Results) == 0 || c.Result.Results[0].SessionID != pdf {
			t.Fatalf("callable: %+v", c)
		}
	})
}

// TestSearchOff: without embeddings, nothing is embedded and search is 404.
func TestSearchOff(t *testing.T) {
	h := newHarnessOn(t, "memory")
	alice := h.signUp()
	h.turn(alice.token, map[string]any{"message": "hello"})
	if r := h.do("GET", "/search?q=hello", alice.token, nil); r.status != 404 || r.errorCode() != "not_found" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestAppendReplayEmbedsNothing: a keyed append is embedded once; its
// retry under the same key (another request) replays it and embeds nothing
// again: no embedding, no write.
func TestAppendReplayEmbedsNothing(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.Embeddings = true })
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "keyed"})
	body := map[string]any{"clientMessageId": "batch-1", "messages": []map[string]any{
		{"role": "user", "content": "Which telescope suits a beginner astronomer?"},
		{"role": "assistant", "content": "A six inch Dobsonian telescope."}}}
	h.do("POST", "/sessions/"+id+"/messages", alice.token, body).want(t, 201)
	h.idle()
	var found searchResp
	h.do("GET", "/search?q=telescope", alice.token, nil).want(t, 200).decode(t, &found)
	if len(found.Results) == 0 {
		t.Fatalf("the first append was not embedded")
	}
	before := h.counter.Snapshot()
	h.do("POST", "/sessions/"+id+"/messages", alice.token, body).want(t, 201)
	h.idle()
	if d := h.counter.Snapshot().Sub(before); d.Writes != 0 {
		t.Errorf("the replay wrote %d documents (%s)", d.Writes, d)
	}
}
