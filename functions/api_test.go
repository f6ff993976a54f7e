package functions_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/llm/llmtest"
)

func TestSessionEndpoints(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()

	var s sessionResp
	r := h.do("POST", "/sessions", alice.token, map[string]any{
		"title": "Groceries", "metadata": map[string]any{"topic": "food", "tags": []string{"home"}}, "retentionDays": 10,
	}).want(t, 201)
	r.decode(t, &s)
	if s.Title != "Groceries" || s.Status != "active" || s.UserID != alice.uid {
		t.Errorf("created %+v", s)
	}
	if got := r.header.Get("Location"); got != "/sessions/"+s.ID {
		t.Errorf("Location = %q", got)
	}
	h.do("GET", "/sessions/"+s.ID, alice.token, nil).want(t, 200)

	var patched sessionResp
	h.do("PATCH", "/sessions/"+s.ID, alice.token, map[string]any{"title": "Weekly shop"}).want(t, 200).decode(t, &patched)
	if patched.Title != "Weekly shop" {
		t.Errorf("patched title %q", patched.Title)
	}
	for _, body := range []string{`{"status":"deleted"}`, `{"title":"x","userId":"someone"}`, `{"messageCount":0}`} {
		if r := h.do("PATCH", "/sessions/"+s.ID, alice.token, body); r.status != 400 || r.errorCode() != "invalid_argument" {
			t.Errorf("PATCH %s: %d %s", body, r.status, r.body)
		}
	}

	// Messages: a batch, then pages both ways.
	var appended struct {
		Messages []messageResp `json:"messages"`
	}
	batch := map[string]any{"clientMessageId": "b1", "messages": []map[string]any{
		{"role": "user", "content": "what's the weather?"},
		{"role": "assistant", "toolCalls": []map[string]any{{"id": "call_1", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Oslo"}`}}}},
		{"role": "tool", "toolCallId": "call_1", "content": "snow"},
		{"role": "assistant", "content": "It snows in Oslo.", "metadata": map[string]any{"model": "own-model", "toolsUsed": []string{"weather"}}},
	}}
	h.do("POST", "/sessions/"+s.ID+"/messages", alice.token, batch).want(t, 201).decode(t, &appended)
	if len(appended.Messages) != 4 || appended.Messages[3].Seq != 3 {
		t.Fatalf("appended %+v", appended.Messages)
	}
	var again struct {
		Messages []messageResp `json:"messages"`
	}
	h.do("POST", "/sessions/"+s.ID+"/messages", alice.token, batch).want(t, 201).decode(t, &again)
	if again.Messages[0].ID != appended.Messages[0].ID {
		t.Errorf("retry stored again: %v vs %v", again.Messages[0].ID, appended.Messages[0].ID)
	}
	batch["messages"] = []map[string]any{{"role": "user", "content": "something else"}}
	if r := h.do("POST", "/sessions/"+s.ID+"/messages", alice.token, batch); r.status != 409 || r.errorCode() != "conflict" {
		t.Errorf("reused key: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/sessions/"+s.ID+"/messages", alice.token, map[string]any{"messages": []map[string]any{{"role": "tool", "toolCallId": "nope", "content": "x"}}}); r.status != 400 {
		t.Errorf("orphan tool result: %d %s", r.status, r.body)
	}
	var page struct {
		Messages      []messageResp `json:"messages"`
		NextPageToken string        `json:"nextPageToken"`
	}
	h.do("GET", "/sessions/"+s.ID+"/messages?limit=3&order=desc", alice.token, nil).want(t, 200).decode(t, &page)
	if len(page.Messages) != 3 || page.Messages[0].Seq != 3 || page.NextPageToken == "" {
		t.Errorf("desc page: %+v", page)
	}
	tok := page.NextPageToken
	page.NextPageToken = ""
	h.do("GET", "/sessions/"+s.ID+"/messages?limit=3&order=desc&pageToken="+tok, alice.token, nil).want(t, 200).decode(t, &page)
	if len(page.Messages) != 1 || page.Messages[0].Seq != 0 || page.NextPageToken != "" {
		t.Errorf("last desc page: %+v", page)
	}
	for _, q := range []string{"limit=abc", "limit=1000", "order=up", "pageToken=zzzz"} {
		if r := h.do("GET", "/sessions/"+s.ID+"/messages?"+q, alice.token, nil); r.status != 400 {
			t.Errorf("GET messages?%s: %d", q, r.status)
		}
	}

	// Lifecycle over HTTP.
	h.do("POST", "/sessions/"+s.ID+"/archive", alice.token, nil).want(t, 200)
	if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": s.ID, "message": "hi"}); r.status != 409 || r.errorCode() != "failed_precondition" {
		t.Errorf("chat on archived: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/sessions/"+s.ID+"/archive", alice.token, nil); r.status != 409 {
		t.Errorf("archive twice: %d", r.status)
	}
	h.do("POST", "/sessions/"+s.ID+"/restore", alice.token, nil).want(t, 200)
	h.do("DELETE", "/sessions/"+s.ID, alice.token, nil).want(t, 200)
	var deleted struct {
		Sessions []sessionResp `json:"sessions"`
	}
	h.do("GET", "/sessions?status=deleted", alice.token, nil).want(t, 200).decode(t, &deleted)
	if len(deleted.Sessions) != 1 || deleted.Sessions[0].ID != s.ID {
		t.Errorf("deleted list: %+v", deleted.Sessions)
	}
	h.do("POST", "/sessions/"+s.ID+"/restore", alice.token, nil).want(t, 200)

	// Three pages of sessions.
	for i := 0; i < 4; i++ {
		h.clock.Advance(time.Second)
		h.do("POST", "/sessions", alice.token, map[string]any{"title": fmt.Sprint("s", i)}).want(t, 201)
	}
	var ids []string
	next := ""
	for pages := 0; ; pages++ {
		var p struct {
			Sessions      []sessionResp `json:"sessions"`
			NextPageToken string        `json:"nextPageToken"`
		}
		h.do("GET", "/sessions?limit=2&pageToken="+next, alice.token, nil).want(t, 200).decode(t, &p)
		for _, s := range p.Sessions {
			ids = append(ids, s.Title)
		}
		if next = p.NextPageToken; next == "" {
			if pages != 2 {
				t.Errorf("%d pages", pages+1)
			}
			break
		}
	}
	if strings.Join(ids, ",") != "s3,s2,s1,s0,Weekly shop" {
		t.Errorf("sessions by updatedAt desc: %v", ids)
	}
	h.do("GET", "/healthz", "", nil).want(t, 200)
}

func TestChat(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	var first chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "Hello there"}).want(t, 200).decode(t, &first)
	if first.SessionID == "" || first.UserMessage.Seq != 0 || first.Reply.Seq != 1 || first.Reply.Content != "echo: Hello there" {
		t.Fatalf("first turn: %+v", first)
	}
	if first.Reply.Metadata.Model != "gpt-4o-mini" || first.Reply.Metadata.FinishReason != "stop" || first.Reply.Tokens == 0 {
		t.Errorf("reply metadata: %+v", first.Reply)
	}
	var second chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": first.SessionID, "message": "And again"}).want(t, 200).decode(t, &second)
	if second.SessionID != first.SessionID || second.Reply.Seq != 3 {
		t.Errorf("second turn: %+v", second)
	}
	reqs := h.turnRequests()
	last := reqs[len(reqs)-1]
	var roles []string
	for _, m := range last.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	want := "system:You are a test assistant.|user:Hello there|assistant:echo: Hello there|user:And again"
	if got := strings.Join(roles, "|"); got != want {
		t.Errorf("the model saw\n%s\nwant\n%s", got, want)
	}
	var s sessionResp
	h.do("GET", "/sessions/"+first.SessionID, alice.token, nil).want(t, 200).decode(t, &s)
	if s.MessageCount != 4 {
		t.Errorf("messageCount %d", s.MessageCount)
	}
	for _, body := range []string{`{"message":""}`, `{"message":"x","sessionId":"bad/id"}`, `{"message":"x","extra":1}`, `{"message":5}`} {
		if r := h.do("POST", "/chat", alice.token, body); r.status != 400 {
			t.Errorf("chat %s: %d %s", body, r.status, r.body)
		}
	}
	if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": "doesNotExist", "message": "x"}); r.status != 404 {
		t.Errorf("chat on a missing session: %d", r.status)
	}
}

func TestChatStream(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response {
		return llmtest.Response{Content: "one two three four five"}
	})
	for _, viaAccept := range []bool{false, true} {
		body := map[string]any{"message": "count to five", "stream": !viaAccept}
		hdr := map[string]string{}
		if viaAccept {
			hdr["Accept"] = "text/event-stream"
		}
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", h.srv.URL+"/chat", bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+alice.token)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		events := readEvents(t, resp.Body, nil)
		resp.Body.Close()
		var names []string
		var text strings.Builder
		for _, e := range events {
			names = append(names, e.name)
			if e.name == "delta" {
				var d struct{ Text string }
				json.Unmarshal(e.data, &d)
				text.WriteString(d.Text)
			}
		}
		if got := strings.Join(names, ","); got != "session,delta,delta,delta,delta,delta,done" {
			t.Errorf("events: %s", got)
		}
		var done chatResp
		json.Unmarshal(events[len(events)-1].data, &done)
		if done.Reply.Content != "one two three four five" || text.String() != done.Reply.Content {
			t.Errorf("streamed %q, stored %q", text.String(), done.Reply.Content)
		}
		if msgs := h.messages(alice.token, done.SessionID); len(msgs) != 2 || msgs[1].Content != done.Reply.Content {
			t.Errorf("stored %+v", msgs)
		}
	}
	// A failure before anything was streamed is a plain JSON error.
	if r := doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": "missing", "message": "x", "stream": true}, nil); r.status != 404 || r.errorCode() != "not_found" {
		t.Errorf("stream on missing session: %d %s", r.status, r.body)
	}
	// A model failure after the session event is an error event.
	h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response { return llmtest.Response{Status: 500} })
	r := doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"message": "x", "stream": true}, nil)
	events := readEvents(t, bytes.NewReader(r.body), nil)
	if len(events) != 2 || events[0].name != "session" || events[1].name != "error" || !strings.Contains(string(events[1].data), `"upstream"`) {
		t.Errorf("events on model failure: %+v", events)
	}
}

// TestModelFailureRetry: the user's message survives a failed model call,
// and a retry with the same key completes the turn without storing it twice.
func TestModelFailureRetry(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response { return llmtest.Response{Status: 503} })
	turn := map[string]any{"message": "important question", "clientMessageId": "turn-1"}
	r := h.do("POST", "/chat", alice.token, turn)
	if r.status != 502 || r.errorCode() != "upstream" {
		t.Fatalf("model failure: %d %s", r.status, r.body)
	}
	var list struct{ Sessions []sessionResp }
	h.do("GET", "/sessions", alice.token, nil).want(t, 200).decode(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].MessageCount != 1 {
		t.Fatalf("after failure: %+v", list.Sessions)
	}
	id := list.Sessions[0].ID

	h.model.SetReply(llmtest.Echo)
	var ok chatResp
	h.do("POST", "/chat", alice.token, turn).want(t, 200).decode(t, &ok)
	if ok.SessionID != id || ok.Reply.Content != "echo: important question" {
		t.Errorf("retry: %+v", ok)
	}
	msgs := h.messages(alice.token, id)
	if len(msgs) != 2 || msgs[0].Content != "important question" || msgs[1].Seq != 1 {
		t.Errorf("after retry: %+v", msgs)
	}
	// Once more: the stored turn is returned and the model is not called.
	h.idle() // the first turn's title request is not a call of this turn
	calls := len(h.model.Requests())
	var replay chatResp
	h.do("POST", "/chat", alice.token, turn).want(t, 200).decode(t, &replay)
	h.idle()
	if !replay.Replayed || replay.Reply.ID != ok.Reply.ID || len(h.model.Requests()) != calls {
		t.Errorf("replay: %+v, model calls %d → %d", replay, calls, len(h.model.Requests()))
	}
	// The same key with another message is a conflict, never a replay of
	// the turn it named.
	if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "different", "clientMessageId": "turn-1"}); r.status != 409 || !strings.Contains(string(r.body), "already used") {
		t.Errorf("a key reused for another message: %d %s", r.status, r.body)
	}
	if got := len(h.messages(alice.token, id)); got != 2 {
		t.Errorf("%d messages", got)
	}
}

func TestSlowModel(t *testing.T) {
	h := newHarness(t, func(c *functions.Config) { c.ModelTimeout = time.Second })
	alice := h.signUp()
	h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response {
		return llmtest.Response{Content: "too late", Delay: 5 * time.Second}
	})
	start := time.Now()
	r := h.do("POST", "/chat", alice.token, map[string]any{"message": "are you there?"})
	if r.status != 502 || time.Since(start) > 4*time.Second {
		t.Errorf("slow model: %d after %s: %s", r.status, time.Since(start), r.body)
	}
}

// TestClientDisconnect: the client leaves after the first streamed piece;
// the reply is still completed and stored.
func TestClientDisconnect(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response {
		return llmtest.Response{Content: "a slow reply in eight small pieces", ChunkDelay: 150 * time.Millisecond}
	})
	ctx, cancel := context.WithCancel(context.Background())
	data, _ := json.Marshal(map[string]any{"message": "talk slowly", "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/chat", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+alice.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sessionID string
	events := readEvents(t, resp.Body, func(e event) bool { return e.name == "delta" })
	for _, e := range events {
		if e.name == "session" {
			var s struct{ SessionID string }
			json.Unmarshal(e.data, &s)
			sessionID = s.SessionID
		}
	}
	cancel()
	resp.Body.Close()
	if sessionID == "" {
		t.Fatalf("no session event before the first delta: %+v", events)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		msgs := h.messages(alice.token, sessionID)
		if len(msgs) == 2 {
			if msgs[1].Content != "a slow reply in eight small pieces" {
				t.Errorf("stored reply %q", msgs[1].Content)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reply not stored after the client left: %+v", msgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestConcurrentTurns: turns racing on one session all land, nothing lost.
func TestConcurrentTurns(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	var s sessionResp
	h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
	const n = 5
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": s.ID, "message": fmt.Sprint("question ", i)}, nil)
			if r.status != 200 {
				t.Errorf("turn %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	msgs := h.messages(alice.token, s.ID)
	seen := map[string]int{}
	for i, m := range msgs {
		if m.Seq != i {
			t.Errorf("message %d has seq %d", i, m.Seq)
		}
		seen[m.Content]++
	}
	for i := 0; i < n; i++ {
		q := fmt.Sprint("question ", i)
		if seen[q] != 1 || seen["echo: "+q] != 1 {
			t.Errorf("%q stored %d times, its reply %d times", q, seen[q], seen["echo: "+q])
		}
	}
	if len(msgs) != 2*n {
		t.Errorf("%d messages, want %d", len(msgs), 2*n)
	}
}

func TestRateLimits(t *testing.T) {
	t.Run("TurnsPerMinute", func(t *testing.T) {
		h := newHarness(t, func(c *functions.Config) { c.TurnsPerMinute = 2 })
		alice, bob := h.signUp(), h.signUp()
		h.do("POST", "/chat", alice.token, map[string]any{"message": "one"}).want(t, 200)
		h.clock.Advance(30 * time.Second)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "two"}).want(t, 200)
		r := h.do("POST", "/chat", alice.token, map[string]any{"message": "three"})
		if r.status != 429 || r.errorCode() != "rate_limited" || r.header.Get("Retry-After") != "30" {
			t.Fatalf("third turn: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		h.do("POST", "/chat", bob.token, map[string]any{"message": "bob is not limited by alice"}).want(t, 200)
		h.clock.Advance(30 * time.Second)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "a new minute"}).want(t, 200)
	})
	t.Run("TokensPerDay", func(t *testing.T) {
		h := newHarness(t, func(c *functions.Config) { c.TokensPerDay = 100 })
		h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response {
			return llmtest.Response{Content: "ok", PromptTokens: 90, CompletionTokens: 20}
		})
		alice := h.signUp()
		h.do("POST", "/chat", alice.token, map[string]any{"message": "spend"}).want(t, 200)
		h.idle() // the title's tokens are charged after the answer, still today
		r := h.do("POST", "/chat", alice.token, map[string]any{"message": "more"})
		wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 429 || wait != 12*3600 { // the clock stands at noon UTC
			t.Fatalf("over the daily budget: %d Retry-After %d", r.status, wait)
		}
		h.clock.Advance(12 * time.Hour)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "a new day"}).want(t, 200)
	})
	// Appends are limited like turns: messages a minute, and the day's tokens.
	t.Run("AppendedMessages", func(t *testing.T) {
		h := newHarness(t, func(c *functions.Config) { c.MessagesPerMinute = 5; c.TokensPerDay = 2000 })
		alice, bob := h.signUp(), h.signUp()
		var s sessionResp
		h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
		batch := func(n int, content string) map[string]any {
			msgs := make([]map[string]any, n)
			for i := range msgs {
				msgs[i] = map[string]any{"role": "user", "content": content}
			}
			return map[string]any{"messages": msgs}
		}
		path := "/sessions/" + s.ID + "/messages"
		h.do("POST", path, alice.token, batch(4, "four")).want(t, 201)
		r := h.do("POST", path, alice.token, batch(2, "two more"))
		if r.status != 429 || r.errorCode() != "rate_limited" || r.header.Get("Retry-After") != "60" {
			t.Fatalf("over the messages a minute: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		h.do("POST", path, alice.token, batch(1, "one fits")).want(t, 201)
		var bs sessionResp
		h.do("POST", "/sessions", bob.token, map[string]any{}).want(t, 201).decode(t, &bs)
		h.do("POST", "/sessions/"+bs.ID+"/messages", bob.token, batch(5, "bob is not limited by alice")).want(t, 201)
		if n := len(h.messages(alice.token, s.ID)); n != 5 {
			t.Fatalf("%d messages stored, want 5 (a refused batch stores nothing)", n)
		}
		// Appended tokens count against the day: one message of 8 KiB of
		// digits (about 2,700 tokens) spends it.
		h.clock.Advance(time.Minute)
		h.do("POST", path, alice.token, batch(1, strings.Repeat("7", 8<<10))).want(t, 201)
		r = h.do("POST", path, alice.token, batch(1, "more"))
		if r.status != 429 || r.errorCode() != "rate_limited" {
			t.Fatalf("over the daily tokens: %d %s", r.status, r.body)
		}
		if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": s.ID, "message": "and turns too"}); r.status != 429 {
			t.Fatalf("a turn after the day's tokens went to appends: %d %s", r.status, r.body)
		}
	})
}

// TestAuth: every authenticated endpoint refuses a missing, malformed or
// dead token, and hides another user's session behind a 404.
func TestAuth(t *testing.T) {
	h := newHarness(t)
	alice, mallory := h.signUp(), h.signUp()
	var chat chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "private"}).want(t, 200).decode(t, &chat)
	id := chat.SessionID
	h.idle() // the title is set after the answer
	before := h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).body
	beforeMsgs := h.do("GET", "/sessions/"+id+"/messages", alice.token, nil).want(t, 200).body

	ghost := h.signUp()
	if err := h.auth.DeleteUser(context.Background(), ghost.uid); err != nil {
		t.Fatal(err)
	}
	endpoints := []struct {
		method, path string
		body         any
	}{
		{"POST", "/chat", map[string]any{"sessionId": id, "message": "hi"}},
		{"POST", "/sessions", map[string]any{}},
		{"GET", "/sessions", nil},
		{"GET", "/sessions/" + id, nil},
		{"PATCH", "/sessions/" + id, map[string]any{"title": "pwned"}},
		{"DELETE", "/sessions/" + id, nil},
		{"POST", "/sessions/" + id + "/archive", nil},
		{"POST", "/sessions/" + id + "/restore", nil},
		{"GET", "/sessions/" + id + "/messages", nil},
		{"POST", "/sessions/" + id + "/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": "injected"}}}},
	}
	for _, ep := range endpoints {
		name := ep.method + " " + ep.path
		for tokName, tok := range map[string]string{"none": "", "malformed": "not.a.jwt", "garbage": "x", "deleted user": ghost.token} {
			if r := h.do(ep.method, ep.path, tok, ep.body); r.status != 401 || r.errorCode() != "unauthenticated" {
				t.Errorf("%s with %s token: %d %s", name, tokName, r.status, r.body)
			}
		}
		if strings.Contains(ep.path, id) {
			if r := h.do(ep.method, ep.path, mallory.token, ep.body); r.status != 404 || r.errorCode() != "not_found" {
				t.Errorf("%s as another user: %d %s", name, r.status, r.body)
			}
		}
	}
	if after := h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).body; !bytes.Equal(after, before) {
		t.Errorf("another user changed the session:\n%s\n%s", before, after)
	}
	if after := h.do("GET", "/sessions/"+id+"/messages", alice.token, nil).want(t, 200).body; !bytes.Equal(after, beforeMsgs) {
		t.Errorf("another user changed the messages")
	}
	var list struct{ Sessions []sessionResp }
	h.do("GET", "/sessions", mallory.token, nil).want(t, 200).decode(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("mallory lists %d sessions", len(list.Sessions))
	}
	// The user id never comes from the body.
	if r := h.do("POST", "/sessions", mallory.token, map[string]any{"userId": alice.uid}); r.status != 400 {
		t.Errorf("userId in a body: %d", r.status)
	}
	// Tokens shaped like the Auth emulator's (unsigned) but for another
	// project, expired, or not decodable are refused. Signatures are
	// checked in production only: the emulator's tokens carry none.
	now := time.Now()
	for name, tok := range map[string]string{
		"other project": forgeToken("other-project", alice.uid, now, now.Add(time.Hour)),
		"expired":       forgeToken(authProject(), alice.uid, now.Add(-2*time.Hour), now.Add(-time.Hour)),
		"undecodable":   strings.Split(alice.token, ".")[0] + ".bm90IGpzb24." + strings.Split(alice.token, ".")[2],
	} {
		if r := h.do("GET", "/sessions", tok, nil); r.status != 401 || r.errorCode() != "unauthenticated" {
			t.Errorf("%s token: %d %s", name, r.status, r.body)
		}
	}
	// The forger's recipe is right: for the right project it is accepted.
	if r := h.do("GET", "/sessions", forgeToken(authProject(), alice.uid, now, now.Add(time.Hour)), nil); r.status != 200 {
		t.Errorf("well-formed emulator token refused: %d %s", r.status, r.body)
	}
}

// forgeToken makes an unsigned ID token like the Auth emulator's.
func forgeToken(project, uid string, iat, exp time.Time) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(map[string]any{
		"iss": "https://securetoken.google.com/" + project, "aud": project, "sub": uid, "user_id": uid,
		"iat": iat.Unix(), "exp": exp.Unix(), "auth_time": iat.Unix(),
		"firebase": map[string]any{"sign_in_provider": "password"},
	}) + "."
}

func TestBadBodies(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	var s sessionResp
	h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
	big := strings.Repeat("x", 70<<10) // over the 64 KiB cap of the test config
	cases := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"oversized chat", "POST", "/chat", map[string]any{"message": big}, 413},
		{"oversized append", "POST", "/sessions/" + s.ID + "/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": big}}}, 413},
		{"malformed JSON", "POST", "/chat", `{"message": "unterminated`, 400},
		{"not an object", "POST", "/sessions", `[1,2,3]`, 400},
		{"trailing data", "POST", "/sessions", `{} {}`, 400},
		{"empty body", "POST", "/chat", "", 400},
		{"unknown field", "POST", "/sessions", `{"title":"x","colour":"red"}`, 400},
		{"unknown metadata key", "POST", "/sessions", `{"metadata":{"topic":"x","secret":1}}`, 400},
		{"wrong type", "POST", "/sessions", `{"title":42}`, 400},
		{"content over 32 KiB", "POST", "/sessions/" + s.ID + "/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": strings.Repeat("y", 33<<10)}}}, 400},
		{"unknown role", "POST", "/sessions/" + s.ID + "/messages", map[string]any{"messages": []map[string]any{{"role": "god", "content": "x"}}}, 400},
		{"malformed id", "GET", "/sessions/..%2F..", nil, 400},
	}
	for _, c := range cases {
		if r := h.do(c.method, c.path, alice.token, c.body); r.status != c.status || r.errorCode() == "" {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
		}
	}
	// A body without Content-Length is capped as it is read.
	req, _ := http.NewRequest("POST", h.srv.URL+"/chat", io.MultiReader(strings.NewReader(`{"message":"`), strings.NewReader(big), strings.NewReader(`"}`)))
	req.Header.Set("Authorization", "Bearer "+alice.token)
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked oversized body: %d", resp.StatusCode)
	}
	if msgs := h.messages(alice.token, s.ID); len(msgs) != 0 {
		t.Errorf("bad bodies stored %d messages", len(msgs))
	}
	if r := h.do("GET", "/nowhere", alice.token, nil); r.status != 404 || r.errorCode() != "not_found" {
		t.Errorf("unknown path: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/sessions", alice.token, nil); r.status != 405 || r.errorCode() != "method_not_allowed" {
		t.Errorf("wrong method: %d %s", r.status, r.body)
	}
}

func TestCORS(t *testing.T) {
	h := newHarness(t)
	pre := func(origin string) response {
		return doRequest(t, h.srv.URL, "OPTIONS", "/chat", "", nil, map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
	}
	r := pre("https://app.example.com")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("allowed preflight: %d %v", r.status, r.header)
	}
	if r := pre("https://evil.example.com"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed origin got %q", r.header.Get("Access-Control-Allow-Origin"))
	}
	alice := h.signUp()
	r = doRequest(t, h.srv.URL, "GET", "/sessions", alice.token, nil, map[string]string{"Origin": "https://app.example.com"})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("simple request: %d %v", r.status, r.header)
	}
}

// TestLogs: one structured line per request, without message content.
func TestLogs(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	var c chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "my secret is swordfish-42"}).want(t, 200).decode(t, &c)
	// The request line is written when the handler ends, which is after the
	// client has its answer (titles and summaries come after the reply).
	var logs string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if logs = h.logs.String(); strings.Contains(logs, `"path":"/chat"`) {
			break
		}
	}
	if strings.Contains(logs, "swordfish") {
		t.Errorf("message content in the logs:\n%s", logs)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if rec["path"] == "/chat" {
			found = true
			if rec["userId"] != alice.uid || rec["sessionId"] != c.SessionID || rec["requestId"] == "" || rec["latencyMs"] == nil {
				t.Errorf("request log: %v", rec)
			}
		}
	}
	if !found {
		t.Errorf("no request log for /chat:\n%s", logs)
	}
}

// TestHealthzUnavailable: with Firestore unreachable, /healthz says so.
func TestHealthzUnavailable(t *testing.T) {
	t.Parallel()
	srv := serveWith(t, firestoredb.New(firestoreAt(t, "127.0.0.1:1")), &functions.FirebaseVerifier{}) // a closed port
	r := doRequest(t, srv, "GET", "/healthz", "", nil, nil)
	if r.status != 503 || !strings.Contains(string(r.body), "unavailable") {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
}
