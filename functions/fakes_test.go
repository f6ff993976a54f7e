package functions_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/functions/functionstest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// The edge's tests run its handlers over small fakes of the services: each
// fake embeds the service's interface (a method no test set panics) and
// records what it was asked.

// tokens is the fake Auth: a bearer token "t-{uid}" is uid's.
type tokens struct{}

func (tokens) Verify(_ context.Context, token string) (string, error) {
	if uid, ok := strings.CutPrefix(token, "t-"); ok && uid != "" {
		return uid, nil
	}
	return "", errs.Errorf(errs.EUNAUTHENTICATED, "the token is not valid")
}

// call is one method call a fake received: its name and arguments.
type call struct {
	name string
	args []any
}

type fakeSessions struct {
	functions.Sessions
	calls []call
	err   error // what every call answers, if set
}

func (f *fakeSessions) answer(name string, args ...any) (*sessions.Session, error) {
	f.calls = append(f.calls, call{name, args})
	if f.err != nil {
		return nil, f.err
	}
	uid, id := args[0].(string), "s-1"
	if len(args) > 1 {
		if s, ok := args[1].(string); ok {
			id = s
		}
	}
	return session(uid, id), nil
}

func (f *fakeSessions) Create(_ context.Context, uid string, in sessions.CreateInput) (*sessions.Session, error) {
	return f.answer("Create", uid, in.Title)
}
func (f *fakeSessions) Get(_ context.Context, uid, id string) (*sessions.Session, error) {
	return f.answer("Get", uid, id)
}
func (f *fakeSessions) Archive(_ context.Context, uid, id string) (*sessions.Session, error) {
	return f.answer("Archive", uid, id)
}
func (f *fakeSessions) Restore(_ context.Context, uid, id string) (*sessions.Session, error) {
	return f.answer("Restore", uid, id)
}
func (f *fakeSessions) Delete(_ context.Context, uid, id string) (*sessions.Session, error) {
	return f.answer("Delete", uid, id)
}
func (f *fakeSessions) Update(_ context.Context, uid, id string, upd sessions.Update) (*sessions.Session, error) {
	title := ""
	if upd.Title != nil {
		title = *upd.Title
	}
	return f.answer("Update", uid, id, title)
}

// session is a session as a service answers it.
func session(uid, id string) *sessions.Session {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	return &sessions.Session{ID: id, UserID: uid, Title: "New chat", TitleSource: "default", Model: "gpt-4o-mini",
		Status: sessions.StatusActive, CreatedAt: at, UpdatedAt: at, LastActivityAt: at, ExpiresAt: at.AddDate(0, 0, 30),
		Metadata: sessions.Metadata{}}
}

// fakeChat runs turns as its script says.
type fakeChat struct {
	functions.Chat
	turns    []chat.TurnRequest
	turn     func(req chat.TurnRequest) (*chat.TurnResult, error)
	progress *chat.Progress // the reply in progress, if any
	follow   []string       // what Follow streams after the draft's text
	stopped  []string       // the sessions whose reply in progress was stopped
}

func (f *fakeChat) Turn(_ context.Context, req chat.TurnRequest) (*chat.TurnResult, error) {
	f.turns = append(f.turns, req)
	return f.turn(req)
}

func (f *fakeChat) InProgress(context.Context, string, string) (*chat.Progress, error) {
	return f.progress, nil
}

func (f *fakeChat) Follow(_ context.Context, uid, sid string, p chat.Progress, send func(string)) (*history.Message, error) {
	send(p.Text)
	text := p.Text
	for _, d := range f.follow {
		send(d)
		text += d
	}
	m := reply(p.ReplyID, text)
	return &m, nil
}

func (f *fakeChat) StopInProgress(_ context.Context, uid, sid string) error {
	if f.progress == nil {
		return errs.Errorf(errs.ENOTFOUND, "no reply of this chat is in progress")
	}
	f.stopped = append(f.stopped, sid)
	return nil
}

// reply is a stored assistant message.
func reply(id, text string) history.Message {
	return history.Message{ID: id, Seq: 2, Role: "assistant", Content: text,
		CreatedAt: time.Date(2026, 11, 28, 9, 0, 1, 0, time.UTC)}
}

// edge is the HTTP edge over fakes, with what each request answered
// checked against docs/openapi.yaml.
type edge struct {
	t   *testing.T
	app *functions.App
	srv http.Handler
}

func newEdge(t *testing.T, configure func(*functions.App)) *edge {
	a := &functions.App{Auth: tokens{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sessions: &fakeSessions{}, Chat: &fakeChat{}, Models: []functions.ChatModel{{Name: "gpt-4o-mini"}}, MaxBodyBytes: 1 << 20}
	if configure != nil {
		configure(a)
	}
	return &edge{t: t, app: a, srv: a.Handler()}
}

// do sends a request as uid ("" sends no token) and answers the response.
func (e *edge) do(method, path, uid, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if uid != "" {
		req.Header.Set("Authorization", "Bearer t-"+uid)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	check := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	check.Header = req.Header.Clone()
	functionstest.CheckContract(e.t, check, rec.Code, rec.Header(), bytes.Clone(rec.Body.Bytes()))
	return rec
}
