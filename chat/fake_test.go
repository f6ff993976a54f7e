package chat_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/clock/clocktest"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// fakeModel answers "re: " and the last user message, reports usage, and
// can fail, stream in pieces or wait; it records what it was asked.
type fakeModel struct {
	mu       sync.Mutex
	requests []chat.Request
	fail     error         // returned by the next calls while set
	pieces   int           // stream the reply in this many pieces (0: one)
	pause    time.Duration // between pieces
	calls    atomic.Int64
	// tools, when set, picks the calls a reply asks for (none: it answers).
	tools func(req chat.Request) []history.ToolCall
}

func (m *fakeModel) Generate(ctx context.Context, req chat.Request, onDelta func(string)) (*chat.Reply, error) {
	m.calls.Add(1)
	m.mu.Lock()
	m.requests = append(m.requests, req)
	fail, pieces, pause, tools := m.fail, m.pieces, m.pause, m.tools
	m.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	if tools != nil {
		if calls := tools(req); len(calls) > 0 {
			return &chat.Reply{ToolCalls: calls, Model: req.Model, FinishReason: "tool_calls", PromptTokens: 10 * len(req.Messages), CompletionTokens: 5}, nil
		}
	}
	last := ""
	for _, msg := range req.Messages {
		if msg.Role == history.RoleUser {
			last = msg.Content
		}
	}
	text := "re: " + last
	if onDelta != nil {
		n := max(pieces, 1)
		size := (len(text) + n - 1) / n
		for i := 0; i < len(text); i += size {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pause):
			}
			onDelta(text[i:min(i+size, len(text))])
		}
	}
	return &chat.Reply{Content: text, Model: req.Model, FinishReason: "stop", PromptTokens: 10 * len(req.Messages), CompletionTokens: 3}, nil
}

func (m *fakeModel) last() chat.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

// fakeTitler names a conversation with its first three words.
type fakeTitler struct{ calls atomic.Int64 }

func (t *fakeTitler) Title(_ context.Context, _, user, _ string) (string, error) {
	t.calls.Add(1)
	w := strings.Fields(user)
	return strings.Join(w[:min(3, len(w))], " "), nil
}

// fakeSummarizer digests messages as their count.
type fakeSummarizer struct{ calls atomic.Int64 }

func (s *fakeSummarizer) Summarize(_ context.Context, model, previous string, msgs []history.Message) (string, string, error) {
	s.calls.Add(1)
	return previous + "|digest", model, nil
}

// world is a chat service on the in-process store with fakes around it.
type world struct {
	svc     *chat.Service
	db      *inprocdb.DB
	model   *fakeModel
	titler  *fakeTitler
	summary *fakeSummarizer
	clock   *clocktest.Clock
}

func newWorld(t *testing.T, limits chat.Limits) *world {
	t.Helper()
	w := &world{db: inprocdb.New(), model: &fakeModel{}, titler: &fakeTitler{}, summary: &fakeSummarizer{},
		clock: clocktest.NewClock(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))}
	ss := sessions.NewService(w.db, "gpt-4o-mini")
	ss.Now = w.clock.Now
	hs := history.NewService(w.db, storetest.Tokens(t))
	hs.Now, hs.Summarizer = w.clock.Now, w.summary
	w.svc = &chat.Service{Turns: w.db, Drafts: w.db, DraftInterval: 100 * time.Millisecond, Sessions: ss, History: hs,
		Model: w.model, Titler: w.titler, Usage: w.db, Limits: limits, SystemPrompt: "You are a test assistant.",
		ModelTimeout: 5 * time.Second, BusyWait: 200 * time.Millisecond, Now: w.clock.Now}
	return w
}

// turn runs a turn and returns its result, failing t on an error.
func (w *world) turn(t *testing.T, req chat.TurnRequest) *chat.TurnResult {
	t.Helper()
	if req.UserID == "" {
		req.UserID = "alice"
	}
	res, err := w.svc.Turn(context.Background(), req)
	if err != nil {
		t.Fatalf("turn %+v: %v", req, err)
	}
	return res
}

var errModelDown = errors.New("the model service is down")
