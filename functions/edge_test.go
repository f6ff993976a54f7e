package functions_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// TestSessionRoutes: each session route asks the sessions service for
// what its method and path say, as the caller, and answers what it
// answers; a service's error is the status of its code; a body the edge
// refuses reaches no service.
func TestSessionRoutes(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		err                      error
		status                   int
		want                     []call // what the service was asked
	}{
		{"create", "POST", "/sessions", `{"title":"Trip"}`, nil, 201, []call{{"Create", []any{"alice", "Trip"}}}},
		{"get", "GET", "/sessions/s-9", "", nil, 200, []call{{"Get", []any{"alice", "s-9"}}}},
		{"rename", "PATCH", "/sessions/s-9", `{"title":"Plans"}`, nil, 200, []call{{"Update", []any{"alice", "s-9", "Plans"}}}},
		{"archive", "POST", "/sessions/s-9/archive", "", nil, 200, []call{{"Archive", []any{"alice", "s-9"}}}},
		{"restore", "POST", "/sessions/s-9/restore", "", nil, 200, []call{{"Restore", []any{"alice", "s-9"}}}},
		{"delete", "DELETE", "/sessions/s-9", "", nil, 200, []call{{"Delete", []any{"alice", "s-9"}}}},
		{"missing", "GET", "/sessions/s-9", "", errs.Errorf(errs.ENOTFOUND, "session not found"), 404, []call{{"Get", []any{"alice", "s-9"}}}},
		{"conflict", "POST", "/sessions/s-9/archive", "", errs.Errorf(errs.ECONFLICT, "it is deleted"), 409, []call{{"Archive", []any{"alice", "s-9"}}}},
		{"unknown field", "PATCH", "/sessions/s-9", `{"Title":"x"}`, nil, 400, nil},
		{"bad id", "GET", "/sessions/a%20b", "", nil, 400, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeSessions{err: tc.err}
			e := newEdge(t, func(a *functions.App) { a.Sessions = fake })
			rec := e.do(tc.method, tc.path, "alice", tc.body)
			if rec.Code != tc.status {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.status)
			}
			if !reflect.DeepEqual(fake.calls, tc.want) {
				t.Errorf("asked %v, want %v", fake.calls, tc.want)
			}
			if tc.status >= 400 && !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("an error without its body: %s", rec.Body)
			}
		})
	}
}

// TestUnauthenticatedReachesNoService: without a valid token every route
// is 401 and no service is asked anything.
func TestUnauthenticatedReachesNoService(t *testing.T) {
	fake := &fakeSessions{}
	ch := &fakeChat{}
	e := newEdge(t, func(a *functions.App) { a.Sessions, a.Chat = fake, ch })
	for _, r := range [][2]string{{"GET", "/sessions"}, {"GET", "/sessions/s-1"}, {"POST", "/chat"}, {"GET", "/ai-sdk/chat/c/stream"}} {
		if rec := e.do(r[0], r[1], "", ""); rec.Code != 401 {
			t.Errorf("%s %s without a token: %d", r[0], r[1], rec.Code)
		}
	}
	if len(fake.calls)+len(ch.turns) != 0 {
		t.Errorf("services were asked: %v %v", fake.calls, ch.turns)
	}
}

// TestChatAnswers: POST /chat hands the turn to the chat service as the
// caller and answers its reply as JSON, or streamed as events in the order
// the turn reported them; a failure before anything was streamed is an
// ordinary error, after it an "error" event.
func TestChatAnswers(t *testing.T) {
	done := func(req chat.TurnRequest) (*chat.TurnResult, error) {
		s := session(req.UserID, "s-1")
		user := history.Message{ID: "m-1", Seq: 1, Role: "user", Content: req.Message, CreatedAt: s.CreatedAt}
		if req.OnStart != nil {
			req.OnStart(s, user, "r-1")
		}
		for _, d := range []string{"Hel", "lo"} {
			if req.OnDelta != nil {
				req.OnDelta(d)
			}
		}
		res := &chat.TurnResult{Session: s, User: user, Reply: reply("r-1", "Hello")}
		req.OnReply(res)
		return res, nil
	}
	late := func(req chat.TurnRequest) (*chat.TurnResult, error) {
		req.OnStart(session(req.UserID, "s-1"), history.Message{ID: "m-1", Role: "user"}, "r-1")
		return nil, errs.Errorf(errs.EUPSTREAM, "the model failed")
	}
	early := func(chat.TurnRequest) (*chat.TurnResult, error) {
		return nil, errs.Errorf(errs.ERATELIMITED, "too many messages")
	}
	for _, tc := range []struct {
		name, body string
		turn       func(chat.TurnRequest) (*chat.TurnResult, error)
		status     int
		events     []string // for a stream: the events' names in order
		has        string
	}{
		{"json", `{"message":"hi"}`, done, 200, nil, `"content":"Hello"`},
		{"stream", `{"message":"hi","stream":true}`, done, 200, []string{"session", "delta", "delta", "done"}, `"text":"lo"`},
		{"fails late", `{"message":"hi","stream":true}`, late, 200, []string{"session", "error"}, `the model failed`},
		{"fails early", `{"message":"hi","stream":true}`, early, 429, nil, `too many messages`},
		{"no message field", `{"mesage":"hi"}`, done, 400, nil, `mesage`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := &fakeChat{turn: tc.turn}
			e := newEdge(t, func(a *functions.App) { a.Chat = ch })
			rec := e.do("POST", "/chat", "bob", tc.body)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.has) {
				t.Fatalf("%d %s, want %d with %s", rec.Code, rec.Body, tc.status, tc.has)
			}
			if got := eventNames(rec.Body.String()); tc.events != nil && !reflect.DeepEqual(got, tc.events) {
				t.Errorf("events %v, want %v", got, tc.events)
			}
			if tc.status == 200 && (len(ch.turns) != 1 || ch.turns[0].UserID != "bob" || ch.turns[0].Message != "hi") {
				t.Errorf("the turn asked: %+v", ch.turns)
			}
			if tc.status == 400 && len(ch.turns) != 0 {
				t.Errorf("a refused body reached the service")
			}
		})
	}
}

// eventNames are the names of a server-sent-events body's events.
func eventNames(body string) []string {
	var names []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
	}
	return names
}

// TestAIChatResumeAndStop: a chat with no reply in progress resumes as 204
// and stops as 404; one with a reply in progress streams its draft's text,
// then what follows, to a finish; its stop is accepted.
func TestAIChatResumeAndStop(t *testing.T) {
	idle := &fakeChat{}
	e := newEdge(t, func(a *functions.App) { a.Chat = idle })
	if rec := e.do("GET", "/ai-sdk/chat/c1/stream", "alice", ""); rec.Code != 204 {
		t.Errorf("resume with nothing in progress: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", "/ai-sdk/chat/c1/stop", "alice", ""); rec.Code != 404 {
		t.Errorf("stop with nothing in progress: %d %s", rec.Code, rec.Body)
	}
	busy := &fakeChat{progress: &chat.Progress{ReplyID: "r-7", Text: "Once upon"}, follow: []string{" a time"}}
	e = newEdge(t, func(a *functions.App) { a.Chat = busy })
	rec := e.do("GET", "/ai-sdk/chat/c1/stream", "alice", "")
	var deltas []string
	finished := false
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		var chunk struct{ Type, Delta string }
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &chunk) == nil {
			if chunk.Type == "text-delta" {
				deltas = append(deltas, chunk.Delta)
			}
			finished = finished || chunk.Type == "finish"
		}
	}
	if rec.Code != 200 || strings.Join(deltas, "") != "Once upon a time" || !finished {
		t.Errorf("resume: %d deltas %q finished %v\n%s", rec.Code, deltas, finished, rec.Body)
	}
	if rec := e.do("POST", "/ai-sdk/chat/c1/stop", "alice", ""); rec.Code != 202 || len(busy.stopped) != 1 {
		t.Errorf("stop: %d, stopped %v", rec.Code, busy.stopped)
	}
}

// TestServicesThatAreOff: without a search (no embeddings) or file
// storage, their routes answer 404 in the API's error shape.
func TestServicesThatAreOff(t *testing.T) {
	e := newEdge(t, nil)
	for _, path := range []string{"/search?q=tea", "/attachments", "/attachments/a-1"} {
		if rec := e.do("GET", path, "alice", ""); rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"not_found"`) {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
}
