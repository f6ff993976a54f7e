package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/storetest"
)

const draftInterval = 50 * time.Millisecond

// longReply is what the slow model says, a word every 20 ms.
var longReply = strings.TrimSpace(strings.Repeat("word ", 200))

func slowModel(h *harness) {
	h.script(&script{chat: func(openai.ChatCompletionRequest) llmtest.Response {
		return llmtest.Response{Content: longReply, ChunkDelay: 20 * time.Millisecond}
	}})
}

// streamTurn starts a streaming turn and returns its events as they come.
func streamTurn(t *testing.T, base, token string, body map[string]any) (<-chan event, func()) {
	t.Helper()
	body["stream"] = true
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+"/chat", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	events := make(chan event, 1000)
	go func() {
		defer close(events)
		readEvents(t, resp.Body, func(e event) bool { events <- e; return false })
	}()
	return events, func() { resp.Body.Close() }
}

// next returns the next event named name, failing after a while.
func next(t *testing.T, events <-chan event, name string) event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before %q", name)
			}
			if e.name == name {
				return e
			}
		case <-deadline:
			t.Fatalf("no %q event", name)
		}
	}
}

// secondInstance is another server on the same Firestore project.
func secondInstance(t *testing.T, h *harness) *httptest.Server {
	cfg := testConfig()
	cfg.DraftInterval = draftInterval
	backend := app.New(cfg, app.Deps{
		Store:  app.Firestore(h.firestore),
		Auth:   &functions.FirebaseVerifier{Client: h.auth},
		Model:  llm.NewOpenAI("test-key", h.model.BaseURL(), nil),
		Tokens: storetest.Tokens(t),
		Log:    slog.New(slog.DiscardHandler),
		Now:    h.clock.Now,
	})
	srv := httptest.NewServer(backend.Handler())
	t.Cleanup(srv.Close)
	return srv
}

type draftView struct {
	ReplyID       string `firestore:"replyId"`
	Text          string `firestore:"text"`
	StopRequested bool   `firestore:"stopRequested"`
}

// draft reads the session's draft as a client's listener would see it.
func (h *harness) draft(id string) (*draftView, bool) {
	snap, err := h.firestore.Collection(firestoredb.SessionsCollection).Doc(id).Collection(firestoredb.ContextCollection).Doc("draft").Get(context.Background())
	if err != nil || !snap.Exists() {
		return nil, false
	}
	var d draftView
	if err := snap.DataTo(&d); err != nil {
		h.t.Fatal(err)
	}
	return &d, true
}

// TestStopFromAnotherInstance: a reply streaming on one instance is
// stopped through another; it is stored with what it said so far and
// finishReason "stopped", and the next turn continues from it.
func TestStopFromAnotherInstance(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.DraftInterval = draftInterval })
	slowModel(h)
	other := secondInstance(t, h)
	alice, bob := h.signUp(), h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "stop"})
	events, done := streamTurn(t, h.srv.URL, alice.token, map[string]any{"sessionId": id, "message": "talk for a while", "clientMessageId": "s1"})
	defer done()
	var start struct {
		ReplyID string `json:"replyId"`
	}
	json.Unmarshal(next(t, events, "session").data, &start)
	next(t, events, "delta")
	if start.ReplyID == "" {
		t.Fatal("the session event names no reply")
	}
	// Neither another user nor a made-up reply can be stopped.
	if r := doRequest(t, other.URL, "POST", "/sessions/"+id+"/replies/"+start.ReplyID+"/stop", bob.token, nil, nil); r.status != 404 {
		t.Errorf("bob stops alice's reply: %d %s", r.status, r.body)
	}
	if r := doRequest(t, other.URL, "POST", "/sessions/"+id+"/replies/nosuchreply/stop", alice.token, nil, nil); r.status != 404 {
		t.Errorf("stopping a reply that is not in progress: %d %s", r.status, r.body)
	}
	doRequest(t, other.URL, "POST", "/sessions/"+id+"/replies/"+start.ReplyID+"/stop", alice.token, nil, nil).want(t, 202)
	var final chatResp
	json.Unmarshal(next(t, events, "done").data, &final)
	if final.Reply.Metadata.FinishReason != "stopped" || final.Reply.Content == "" || len(final.Reply.Content) >= len(longReply) ||
		!strings.HasPrefix(longReply, strings.TrimSpace(final.Reply.Content)) || final.Reply.ID != start.ReplyID {
		t.Fatalf("stopped reply: %+v", final.Reply)
	}
	h.idle()
	msgs := h.messages(alice.token, id)
	if len(msgs) != 2 || msgs[1].Content != final.Reply.Content || msgs[1].Metadata.FinishReason != "stopped" {
		t.Fatalf("stored: %+v", msgs)
	}
	if _, ok := h.draft(id); ok {
		t.Error("the draft is still there after the reply was stored")
	}
	// The next turn sends the stopped reply as it was.
	var ctxResp struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &ctxResp)
	last := ctxResp.Messages[len(ctxResp.Messages)-1]
	if last.Role != "assistant" || last.Content != final.Reply.Content {
		t.Errorf("the context ends with %+v", last)
	}
	// A retry of the stopped turn is its replay.
	var again chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "talk for a while", "clientMessageId": "s1"}).want(t, 200).decode(t, &again)
	if !again.Replayed || again.Reply.Content != final.Reply.Content {
		t.Errorf("retry after a stop: %+v", again)
	}
}

// TestDraftFollowsTheReply: while a reply streams, its partial text is in
// the session's draft, growing at most every DraftInterval; a page
// reloaded mid-reply finds it there, and once the reply is stored the
// draft is gone and the message has the whole text.
func TestDraftFollowsTheReply(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.DraftInterval = draftInterval })
	slowModel(h)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "reload"})
	events, done := streamTurn(t, h.srv.URL, alice.token, map[string]any{"sessionId": id, "message": "a long answer please"})
	defer done()
	var start struct {
		ReplyID string `json:"replyId"`
	}
	json.Unmarshal(next(t, events, "session").data, &start)
	var seen []string
	waitFor(t, "the draft to grow twice", func() bool {
		if d, ok := h.draft(id); ok && d.ReplyID == start.ReplyID && d.Text != "" && (len(seen) == 0 || d.Text != seen[len(seen)-1]) {
			seen = append(seen, d.Text)
		}
		return len(seen) >= 2
	})
	for i, text := range seen {
		if !strings.HasPrefix(longReply, strings.TrimSpace(text)) || (i > 0 && !strings.HasPrefix(text, seen[i-1])) {
			t.Fatalf("draft %d is not a growing prefix of the reply: %q", i, text)
		}
	}
	var final chatResp
	json.Unmarshal(next(t, events, "done").data, &final)
	if final.Reply.Content != longReply || final.Reply.Metadata.FinishReason == "stopped" {
		t.Fatalf("final reply: %.80q %q", final.Reply.Content, final.Reply.Metadata.FinishReason)
	}
	if _, ok := h.draft(id); ok {
		t.Error("the draft outlived the reply")
	}
	if r := h.do("POST", fmt.Sprintf("/sessions/%s/replies/%s/stop", id, start.ReplyID), alice.token, nil); r.status != 404 {
		t.Errorf("stopping a finished reply: %d %s", r.status, r.body)
	}
}
