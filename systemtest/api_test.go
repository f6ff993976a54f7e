package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
)

func TestSessionEndpoints(t *testing.T) { onBothStores(t, testSessionEndpoints) }

func testSessionEndpoints(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
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

func TestChat(t *testing.T) { onBothStores(t, testChat) }

func testChat(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
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

func TestChatStream(t *testing.T) { onBothStores(t, testChatStream) }

func testChatStream(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
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
	h := newHarnessOn(t, "memory", func(c *app.Config) { c.ModelTimeout = time.Second })
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
