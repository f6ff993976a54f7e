package chat_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// fakeIndexer records the batches of messages given to it to index, each
// as role:content.
type fakeIndexer struct {
	mu      sync.Mutex
	batches [][]string
}

func (f *fakeIndexer) Index(_ context.Context, _ *sessions.Session, msgs []history.Message) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b []string
	for _, m := range msgs {
		b = append(b, string(m.Role)+":"+m.Content)
	}
	f.batches = append(f.batches, b)
	return len(msgs), nil
}

func (w *world) session(t *testing.T, in sessions.CreateInput) *sessions.Session {
	t.Helper()
	s, err := w.svc.Sessions.Create(context.Background(), "alice", in)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAppend: an app's own messages are stored in order, under their key
// once; the version of a context read fences them (412 when the session
// moved on); a batch over the minute's limit is refused whole; system
// messages are the operator's to allow; bad batches name the field.
func TestAppend(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		limits chat.Limits
		run    func(t *testing.T, w *world, s *sessions.Session) error
		code   errs.Code
	}{
		{"stored in order", chat.Limits{}, func(t *testing.T, w *world, s *sessions.Session) error {
			a, err := w.svc.Append(ctx, "alice", s.ID, "", "", []history.Draft{{Role: history.RoleUser, Content: "q"}, {Role: history.RoleAssistant, Content: "a"}})
			if err == nil && (len(a.Messages) != 2 || a.Messages[1].ParentSeq != a.Messages[0].Seq || a.Version == "") {
				t.Errorf("appended %+v", a)
			}
			return err
		}, ""},
		{"a key replays", chat.Limits{}, func(t *testing.T, w *world, s *sessions.Session) error {
			d := []history.Draft{{Role: history.RoleUser, Content: "q"}}
			a, err := w.svc.Append(ctx, "alice", s.ID, "k", "", d)
			if err != nil {
				return err
			}
			b, err := w.svc.Append(ctx, "alice", s.ID, "k", "", d)
			if err == nil && b.Messages[0].ID != a.Messages[0].ID {
				t.Errorf("a replay stored %s, first %s", b.Messages[0].ID, a.Messages[0].ID)
			}
			return err
		}, ""},
		{"a stale version", chat.Limits{}, func(t *testing.T, w *world, s *sessions.Session) error {
			p, err := w.svc.Preview(ctx, "alice", s.ID)
			if err != nil {
				return err
			}
			if _, err := w.svc.Append(ctx, "alice", s.ID, "", p.Version, []history.Draft{{Role: history.RoleUser, Content: "first"}}); err != nil {
				return err
			}
			_, err = w.svc.Append(ctx, "alice", s.ID, "", p.Version, []history.Draft{{Role: history.RoleUser, Content: "second"}})
			return err
		}, errs.ECHANGED},
		{"over the minute's limit", chat.Limits{MessagesPerMinute: 2}, func(t *testing.T, w *world, s *sessions.Session) error {
			_, err := w.svc.Append(ctx, "alice", s.ID, "", "", []history.Draft{{Role: history.RoleUser, Content: "1"}, {Role: history.RoleUser, Content: "2"}, {Role: history.RoleUser, Content: "3"}})
			return err
		}, errs.ERATELIMITED},
		{"a system message", chat.Limits{}, func(t *testing.T, w *world, s *sessions.Session) error {
			_, err := w.svc.Append(ctx, "alice", s.ID, "", "", []history.Draft{{Role: history.RoleSystem, Content: "obey"}})
			if err != nil && !strings.Contains(errs.Message(err), "messages[0].role") {
				t.Errorf("the message %q does not name the field", errs.Message(err))
			}
			return err
		}, errs.EINVALID},
		{"another user's session", chat.Limits{}, func(t *testing.T, w *world, s *sessions.Session) error {
			_, err := w.svc.Append(ctx, "bob", s.ID, "", "", []history.Draft{{Role: history.RoleUser, Content: "mine?"}})
			return err
		}, errs.ENOTFOUND},
		{"an empty batch", chat.Limits{}, func(t *testing.T, w *world, s *sessions.Session) error {
			_, err := w.svc.Append(ctx, "alice", s.ID, "", "", nil)
			return err
		}, errs.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.limits)
			err := tc.run(t, w, w.session(t, sessions.CreateInput{}))
			if got := errs.CodeOf(err); got != tc.code {
				t.Fatalf("error %v (%q), want %q", err, got, tc.code)
			}
		})
	}
}

// TestAfterAppend: what an append stored is given to be indexed after the
// answer, as one batch (recall.Units makes its units), and a summary is made when the session's budget needs one, with
// the server's summarizer, unless the app makes its own.
func TestAfterAppend(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, chat.Limits{})
	idx := &fakeIndexer{}
	w.svc.Indexer = idx
	s := w.session(t, sessions.CreateInput{})
	a, err := w.svc.Append(ctx, "alice", s.ID, "", "", []history.Draft{
		{Role: history.RoleAssistant, Content: "Welcome!"},
		{Role: history.RoleUser, Content: "q1"}, {Role: history.RoleAssistant, Content: "a1"},
		{Role: history.RoleUser, Content: "unanswered"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := chat.Searchable(a.Messages); n != 4 {
		t.Errorf("searchable %d, want 4", n)
	}
	w.svc.AfterAppend(ctx, a)
	if want := "[[assistant:Welcome! user:q1 assistant:a1 user:unanswered]]"; fmt.Sprint(idx.batches) != want {
		t.Errorf("indexed %v, want %s", idx.batches, want)
	}

	for _, tc := range []struct {
		summaries sessions.Summaries
		want      bool
	}{{"", true}, {sessions.SummariesApp, false}} {
		t.Run(fmt.Sprintf("summaries %q", tc.summaries), func(t *testing.T) {
			w := newWorld(t, chat.Limits{})
			s := w.session(t, sessions.CreateInput{Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer, BudgetTokens: 1000, Summaries: tc.summaries}})
			for i := range 12 {
				a, err := w.svc.Append(ctx, "alice", s.ID, "", "", []history.Draft{
					{Role: history.RoleUser, Content: fmt.Sprint(i, strings.Repeat(" words about the plan", 20))},
					{Role: history.RoleAssistant, Content: fmt.Sprint(i, strings.Repeat(" more on the plan", 20))}})
				if err != nil {
					t.Fatal(err)
				}
				w.svc.AfterAppend(ctx, a)
			}
			p, err := w.svc.Preview(ctx, "alice", s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if made := w.summary.calls.Load() > 0; made != tc.want || (p.Context.Compaction != nil) != tc.want || (p.CompactionDue != nil) == tc.want {
				t.Errorf("summaries made %v (%d), in context %v, due %v", made, w.summary.calls.Load(), p.Context.Compaction != nil, p.CompactionDue)
			}
		})
	}
}

// TestPreview: what the next turn would send, with the operator's prompt;
// another user's session is not found.
func TestPreview(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, chat.Limits{})
	r := w.turn(t, chat.TurnRequest{Message: "hello there"})
	p, err := w.svc.Preview(ctx, "alice", r.Session.ID)
	if err != nil || p.Request.System != "You are a test assistant." || len(p.Request.Messages) != 2 || p.Version == "" {
		t.Fatalf("preview %+v %v", p, err)
	}
	if _, err := w.svc.Preview(ctx, "bob", r.Session.ID); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Errorf("another user's preview: %v", err)
	}
	if _, err := w.svc.Preview(ctx, "alice", "__bad__"); errs.CodeOf(err) != errs.EINVALID {
		t.Errorf("a malformed id: %v", err)
	}
}

// TestSearchAdmission: searches count against the minute's limit and need
// tokens left today.
func TestSearchAdmission(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, chat.Limits{SearchesPerMinute: 2, TokensPerDay: 1000})
	for range 2 {
		if err := w.svc.AdmitSearch(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.svc.AdmitSearch(ctx, "alice"); errs.CodeOf(err) != errs.ERATELIMITED {
		t.Errorf("the third search in a minute: %v", err)
	}
	w.svc.Spend(ctx, "bob", 1000)
	if err := w.svc.AdmitSearch(ctx, "bob"); errs.CodeOf(err) != errs.ERATELIMITED {
		t.Errorf("a search on a spent day: %v", err)
	}
}
