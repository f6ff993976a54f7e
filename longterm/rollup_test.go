package longterm_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// noteWriter writes month notes and backgrounds, counting each kind of
// request, and fails while down.
type noteWriter struct {
	mu          sync.Mutex
	notes, bgs  int
	down        bool
	lastRequest string
}

func (m *noteWriter) Complete(_ context.Context, _, system, user string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return "", errs.Errorf(errs.EUPSTREAM, "the model did not answer")
	}
	m.lastRequest = user
	switch system {
	case prompts.MonthNote:
		m.notes++
		return "Planned   a trip\nby train.", nil
	case prompts.Background:
		m.bgs++
		return "Travels by train.", nil
	}
	return "", errs.Errorf(errs.EINTERNAL, "unexpected request")
}

func (m *noteWriter) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.notes + m.bgs
}

// rollWorld is a longterm service over the in-process store whose
// history model is a noteWriter.
type rollWorld struct {
	*storetest.Env
	db    *inprocdb.DB
	lt    *longterm.Service
	model *noteWriter
}

func newRollWorld(t *testing.T) *rollWorld {
	db := inprocdb.New()
	e := storetest.NewEnv(t, db)
	m := &noteWriter{}
	lt := &longterm.Service{Store: db, Sessions: db, Messages: db, Rolls: db, Model: m, Tokens: e.Tokens,
		Settings: longterm.DefaultSettings(), Now: e.Clock.Now, HistoryModel: "history-model"}
	return &rollWorld{Env: e, db: db, lt: lt, model: m}
}

// session creates a session of user titled title with an exchange in it
// (none with empty), optionally opted out of learning.
func (w *rollWorld) session(t *testing.T, user, title string, empty, noLearning bool) *sessions.Session {
	t.Helper()
	s := storetest.Must[*sessions.Session](t)(w.Sessions.Create(context.Background(), user, sessions.CreateInput{Title: title, NoLearning: noLearning}))
	if !empty {
		w.Say(t, s, history.RoleUser, "how do I get to "+title+"?")
		w.Say(t, s, history.RoleAssistant, "by train")
	}
	return w.Reload(t, s)
}

func (w *rollWorld) history(t *testing.T, user string) longterm.HistoryView {
	t.Helper()
	return storetest.Must[*longterm.View](t)(w.lt.Get(context.Background(), user)).History
}

// TestRollUp: a roll-up makes each session with messages an episode of
// the recent tier (archived ones too; not one opted out of learning or
// empty) without the model; a second at the same moment changes nothing;
// a month on, the episodes move into their month's note, written once by
// the model; a user whose memory is off is not rolled up; a model that
// fails leaves the history as it was.
func TestRollUp(t *testing.T) {
	ctx := context.Background()
	w := newRollWorld(t)
	w.session(t, "alice", "Bergen", false, false)
	oslo := w.session(t, "alice", "Oslo", false, false)
	w.session(t, "alice", "Secret", false, true)
	w.session(t, "alice", "Nothing yet", true, false)
	storetest.Must[*sessions.Session](t)(w.Sessions.Archive(ctx, "alice", oslo.ID))
	w.Clock.Advance(time.Hour)

	if err := w.lt.RollUp(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	first := w.history(t, "alice")
	if got := first.Recent.Text; !strings.Contains(got, "Bergen") || !strings.Contains(got, "Oslo") || strings.Contains(got, "Secret") || strings.Contains(got, "Nothing yet") {
		t.Errorf("recent tier %q: want Bergen and Oslo only", got)
	}
	if first.RolledUpAt == nil || !first.RolledUpAt.Equal(w.Clock.Now()) || w.model.calls() != 0 {
		t.Errorf("rolled up at %v with %d model calls", first.RolledUpAt, w.model.calls())
	}

	t.Run("again at the same moment: nothing changes", func(t *testing.T) {
		if err := w.lt.RollUp(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if again := w.history(t, "alice"); again.Recent.Text != first.Recent.Text || !again.RolledUpAt.Equal(*first.RolledUpAt) {
			t.Errorf("history changed: %+v", again)
		}
	})
	t.Run("a failing model leaves it as it was", func(t *testing.T) {
		w.Clock.Advance(31 * 24 * time.Hour)
		w.model.down = true
		if err := w.lt.RollUp(ctx, "alice"); errs.CodeOf(err) != errs.EUPSTREAM {
			t.Fatalf("rolled up with the model down: %v", err)
		}
		w.model.down = false
		if got := w.history(t, "alice"); got.Recent.Text != first.Recent.Text || got.Months.Text != "" {
			t.Errorf("history after a failed roll-up: %+v", got)
		}
	})
	t.Run("a month on: a month note", func(t *testing.T) {
		if err := w.lt.RollUp(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		got := w.history(t, "alice")
		if got.Recent.Text != "" || got.Months.Text != "Jan 2026: Planned a trip by train." || w.model.notes != 1 {
			t.Errorf("after a month: recent %q, months %q, %d notes written", got.Recent.Text, got.Months.Text, w.model.notes)
		}
		if !strings.Contains(w.model.lastRequest, "Bergen") || !strings.Contains(w.model.lastRequest, "Oslo") {
			t.Errorf("the note was asked of %q", w.model.lastRequest)
		}
	})
	t.Run("memory off: not rolled up", func(t *testing.T) {
		w.session(t, "bob", "Tromsø", false, false)
		if err := w.lt.SetEnabled(ctx, "bob", false); err != nil {
			t.Fatal(err)
		}
		if err := w.lt.RollUp(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		if got := w.history(t, "bob"); got.RolledUpAt != nil || got.Recent.Text != "" {
			t.Errorf("bob's history with memory off: %+v", got)
		}
	})
}

// TestRollUpDue: the daily run rolls up every user active since the last
// complete run, once each; a user whose roll-up fails is counted and the
// run's mark is not moved, so the next run looks again from the same
// moment; a run cut short is not complete.
func TestRollUpDue(t *testing.T) {
	ctx := context.Background()
	w := newRollWorld(t)
	for _, user := range []string{"alice", "bob", "carol"} {
		w.session(t, user, "trip of "+user, false, false)
		w.session(t, user, "another trip of "+user, false, false)
	}
	w.Clock.Advance(time.Hour)
	var ran []string
	var mu sync.Mutex
	failing := map[string]bool{}
	run := func(ctx context.Context, user string) error {
		mu.Lock()
		ran = append(ran, user)
		mu.Unlock()
		if failing[user] {
			return errs.Errorf(errs.EUNAVAILABLE, "down")
		}
		return w.lt.RollUp(ctx, user)
	}
	never := func() bool { return false }
	var asked atomic.Int32
	for _, tc := range []struct {
		name    string
		bobDown bool
		out     func() bool
		report  longterm.RollUpReport
		ran     int
	}{
		// Six sessions listed, whole; two users' roll-ups each take their
		// two from the listing (no query of their own) and write their
		// history once.
		{"bob fails", true, never, longterm.RollUpReport{Users: 3, Failed: 1, Complete: true, Listed: 6, Written: 2}, 3},
		// The same sessions listed; nothing new to write.
		{"again from the same moment", true, never, longterm.RollUpReport{Users: 3, Failed: 1, Complete: true, Listed: 6}, 3},
		{"cut short", false, func() bool { return asked.Add(1) > 1 }, longterm.RollUpReport{Users: 1, Listed: 6}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran, failing["bob"] = nil, tc.bobDown
			report, err := w.lt.RollUpDue(ctx, run, tc.out)
			want := tc.report
			if len(ran) == 1 && ran[0] == "bob" && !tc.bobDown {
				// Users roll up several at once, so which one a run cut
				// short reaches first varies; bob, down until now, then
				// writes his history.
				want.Written = 1
			}
			if err != nil || report != want || len(ran) != tc.ran {
				t.Errorf("report %+v after %v (%v); want %+v after %d users", report, ran, err, want, tc.ran)
			}
		})
	}
	t.Run("once bob succeeds, the mark moves and nobody is due", func(t *testing.T) {
		if report, err := w.lt.RollUpDue(ctx, run, never); err != nil || report.Failed != 0 || !report.Complete {
			t.Fatalf("report %+v (%v)", report, err)
		}
		w.Clock.Advance(time.Hour)
		ran = nil
		if report, err := w.lt.RollUpDue(ctx, run, never); err != nil || report.Users != 0 || len(ran) != 0 {
			t.Errorf("a run with nobody active: %+v after %v (%v)", report, ran, err)
		}
	})
	t.Run("users take their sessions from the listing, unless they look further back", func(t *testing.T) {
		for _, trip := range []string{"a third trip", "a fourth trip"} {
			w.Clock.Advance(time.Minute) // after the last run's mark
			w.session(t, "bob", trip+" of bob", false, false)
			w.session(t, "dave", trip+" of dave", false, false)
			w.Clock.Advance(time.Hour)
			report, err := w.lt.RollUpDue(ctx, run, never)
			if err != nil || report.Users != 2 || report.Written != 2 || report.Listed != 2 || !report.Complete {
				t.Fatalf("report %+v (%v)", report, err)
			}
			// The first time, dave (never rolled up: his history looks
			// back months) queries; the second, both histories were
			// written as of the last mark, and nobody queries.
			if first := trip == "a third trip"; first && report.SessionsRead == 0 || !first && report.SessionsRead != 0 {
				t.Errorf("%s: %d sessions read by queries", trip, report.SessionsRead)
			}
			if h := w.history(t, "dave"); !strings.Contains(h.Recent.Text, trip+" of dave") {
				t.Errorf("dave's history: %+v", h)
			}
		}
	})
}
