package retention_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// slowStore takes a known time for each kind of the sweep's work, so that
// each phase's time can be told apart from the others'.
type slowStore struct {
	store
	purge, softDelete, count time.Duration
	counted                  *atomic.Int32 // calls of CountExpired (nil: not counted)
}

func (r slowStore) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	time.Sleep(r.purge)
	return r.store.PurgeSessions(ctx, ids, check, forget)
}

func (r slowStore) UpdateSessions(ctx context.Context, userID string, ids []string, fn func(*sessions.Session) error) ([]error, error) {
	time.Sleep(r.softDelete)
	return r.store.UpdateSessions(ctx, userID, ids, fn)
}

func (r slowStore) CountExpired(ctx context.Context, st sessions.Status, now time.Time) (int, error) {
	time.Sleep(r.count)
	if r.counted != nil {
		r.counted.Add(1)
	}
	return r.store.CountExpired(ctx, st, now)
}

// TestReportPhases: a run's report gives every phase in order, each with
// its own time (at least what its work took) and what it did, adding up
// to the report's counts; the phases add up to the total, and the total is
// the run's wall time. A run that completed with nothing failed knows its
// backlog is none without counting it.
func TestReportPhases(t *testing.T) {
	e := storetest.NewEnv(t, inprocdb.New())
	var purged, idle []*sessions.Session
	for i := range 6 {
		user := []string{"alice", "bob"}[i%2]
		idle = append(idle, e.NewSession(t, user))
		s := e.NewSession(t, user)
		e.Say(t, s, "user", "a question")
		if _, err := e.Sessions.Delete(context.Background(), user, s.ID); err != nil {
			t.Fatal(err)
		}
		purged = append(purged, s)
	}
	e.Clock.Advance(61 * sessions.Day) // the deleted past their 30 days, the idle past theirs
	sw := sweeper(e.DB.(store), e.Clock)
	sw.PageSize = 4 // pages of each kind take turns
	var counted atomic.Int32
	sw.Store = slowStore{store: e.DB.(store), purge: 30 * time.Millisecond, softDelete: 20 * time.Millisecond, count: 10 * time.Millisecond, counted: &counted}
	start := time.Now()
	r := run(t, sw)
	wall := time.Since(start)

	want := []string{retention.PhaseResumePurges, retention.PhasePurge, retention.PhaseSoftDelete, retention.PhaseTrim, retention.PhaseBacklog}
	var names []string
	var sum int64
	at := map[string]retention.Phase{}
	for _, p := range r.Phases {
		names, sum = append(names, p.Name), sum+p.Ms
		at[p.Name] = p
	}
	if len(names) != len(want) {
		t.Fatalf("phases %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("phases %v, want %v", names, want)
		}
	}
	if r.Purged != len(purged) || r.SoftDeleted != len(idle) {
		t.Fatalf("purged %d, soft-deleted %d; want %d and %d", r.Purged, r.SoftDeleted, len(purged), len(idle))
	}
	// Counts add up to the report's.
	if p := at[retention.PhasePurge].Counts; p["sessionsPurged"] != r.Purged || p["documentsDeleted"] != r.DocumentsDeleted || p["failed"] != 0 {
		t.Errorf("purge phase counts %v; report purged %d, deleted %d documents", p, r.Purged, r.DocumentsDeleted)
	}
	if p := at[retention.PhaseSoftDelete].Counts; p["sessionsSoftDeleted"] != r.SoftDeleted {
		t.Errorf("soft-delete phase counts %v; report soft-deleted %d", p, r.SoftDeleted)
	}
	if p := at[retention.PhaseBacklog].Counts; p == nil || p["toPurge"] != 0 || p["toSoftDelete"] != 0 || counted.Load() != 0 {
		t.Errorf("backlog phase counts %v, after %d counts", p, counted.Load())
	}
	// Each phase holds its own work's time: two pages of purges, two
	// pages of soft-deletes (a batch a user, at once); the backlog none.
	for name, least := range map[string]time.Duration{retention.PhasePurge: 2 * 30 * time.Millisecond,
		retention.PhaseSoftDelete: 2 * 20 * time.Millisecond, retention.PhaseBacklog: 0} {
		if got := time.Duration(at[name].Ms) * time.Millisecond; got < least || got > least+wall/2 {
			t.Errorf("phase %s took %v, want at least %v (the run took %v)", name, got, least, wall)
		}
	}
	total := time.Duration(r.DurationMs) * time.Millisecond
	if sum > r.DurationMs || r.DurationMs-sum > int64(len(want)) || total > wall || wall-total > 20*time.Millisecond {
		t.Errorf("phases add up to %d ms of a total of %v; the run took %v", sum, total, wall)
	}
	if r.PurgeMs != at[retention.PhasePurge].Ms+at[retention.PhaseResumePurges].Ms || r.SoftDeleteMs != at[retention.PhaseSoftDelete].Ms {
		t.Errorf("purgeMs %d, softDeleteMs %d; phases %+v", r.PurgeMs, r.SoftDeleteMs, r.Phases)
	}
}

// failingStore fails the soft-deletes of one session.
type failingStore struct {
	store
	fail string
}

func (r failingStore) UpdateSessions(ctx context.Context, userID string, ids []string, fn func(*sessions.Session) error) ([]error, error) {
	out, err := r.store.UpdateSessions(ctx, userID, ids, func(s *sessions.Session) error {
		if s.ID == r.fail {
			return errs.Errorf(errs.EUNAVAILABLE, "unavailable")
		}
		return fn(s)
	})
	return out, err
}

// TestBacklogKnownOrCounted: a run that completed with nothing failed
// says its backlog is none without counting; a run with a failure, or one
// its budget cut short, counts what is left, and each says so rightly.
func TestBacklogKnownOrCounted(t *testing.T) {
	e := storetest.NewEnv(t, inprocdb.New())
	var idle []*sessions.Session
	for range 5 {
		idle = append(idle, e.NewSession(t, "alice"))
	}
	e.Clock.Advance(31 * sessions.Day)
	var counted atomic.Int32
	sw := sweeper(e.DB.(store), e.Clock)
	sw.Store = slowStore{store: failingStore{store: e.DB.(store), fail: idle[0].ID}, counted: &counted}
	r, err := sw.Run(context.Background(), false)
	if err != nil || !r.Complete || r.Failed != 1 || r.Backlog == nil || r.Backlog.ToSoftDelete != 1 || counted.Load() == 0 {
		t.Fatalf("a run with a failure: %+v, %v (backlog %+v, %d counts)", r, err, r.Backlog, counted.Load())
	}
	counted.Store(0)
	sw.Store = slowStore{store: e.DB.(store), counted: &counted}
	r = run(t, sw)
	if r.SoftDeleted != 1 || r.Backlog == nil || r.Backlog.Total() != 0 || counted.Load() != 0 || r.BacklogChange == nil || *r.BacklogChange != -1 {
		t.Fatalf("a clean run: %+v (backlog %+v, %d counts)", r, r.Backlog, counted.Load())
	}
	for range 3 {
		e.NewSession(t, "bob")
	}
	e.Clock.Advance(31 * sessions.Day)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // cut short before any work
	r, err = sw.Run(ctx, false)
	if err != nil || r.Complete || r.Backlog == nil || r.Backlog.ToSoftDelete != 3 || counted.Load() == 0 {
		t.Errorf("a cut-off run: %+v, %v (backlog %+v, %d counts)", r, err, r.Backlog, counted.Load())
	}
}

// TestPhasesBeside: a phase that runs beside the others has its own time
// and start; the run's total is its wall time, from the phase before all
// others to the last to end, and the phases add up to it and the overlap.
func TestPhasesBeside(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := at
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	r := &retention.Report{}
	r.StartClock(func() time.Time { return now })
	now = at.Add(ms(10))
	r.Lap("a", nil)
	now = at.Add(ms(20))
	r.Lap("c", nil)
	r.Beside("b", at, ms(25), 3, map[string]int{"n": 1}) // from the start, past c's end
	now = at.Add(ms(25))
	r.Resume() // waited for b
	now = at.Add(ms(30))
	r.Lap("d", nil)
	r.Before("open", ms(5), 0, nil)
	want := map[string][2]int64{"open": {0, 5}, "a": {5, 10}, "c": {15, 10}, "b": {5, 25}, "d": {30, 5}}
	for _, p := range r.Phases {
		if w := want[p.Name]; p.StartMs != w[0] || p.Ms != w[1] {
			t.Errorf("phase %s starts at %d ms and takes %d, want %v", p.Name, p.StartMs, p.Ms, w)
		}
	}
	if r.DurationMs != 35 || r.OverlapMs != 20 || r.RPCs != 3 || r.Phases[0].Name != "open" {
		t.Errorf("total %d ms, overlap %d ms, %d round trips; phases %+v", r.DurationMs, r.OverlapMs, r.RPCs, r.Phases)
	}
	// A first phase beside the others (the after-turn jobs) goes in front
	// of them, from the run's start, with its own time.
	r = &retention.Report{}
	now = at
	r.StartClock(func() time.Time { return now })
	now = at.Add(ms(10))
	r.Lap("a", nil)
	r.First("jobs", at, ms(15), 2, nil)
	if p := r.Phases[0]; p.Name != "jobs" || p.StartMs != 0 || p.Ms != 15 || r.DurationMs != 15 || r.OverlapMs != 10 || r.RPCs != 2 {
		t.Errorf("a first phase beside: %+v; total %d ms, overlap %d ms", r.Phases, r.DurationMs, r.OverlapMs)
	}
}

// meetingStore holds each kind's first query of due sessions until all
// three have started, or a while has passed.
type meetingStore struct {
	store
	started chan struct{}
	met     atomic.Int32 // first queries that met the others
}

func (m *meetingStore) ExpiredSessions(ctx context.Context, st sessions.Status, now time.Time, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	if after == nil {
		m.started <- struct{}{}
		deadline := time.Now().Add(2 * time.Second)
		for len(m.started) < cap(m.started) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if len(m.started) == cap(m.started) {
			m.met.Add(1)
		}
	}
	return m.store.ExpiredSessions(ctx, st, now, after, limit)
}

// TestQueriesAhead: each kind's first query of due sessions starts as the
// run starts, at once with the others, not when the kinds before it have
// had their turn; the run does the same work.
func TestQueriesAhead(t *testing.T) {
	e := storetest.NewEnv(t, inprocdb.New())
	ctx := context.Background()
	idle, archived, deleted := e.NewSession(t, "alice"), e.NewSession(t, "alice"), e.NewSession(t, "bob")
	if _, err := e.Sessions.Archive(ctx, "alice", archived.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Delete(ctx, "bob", deleted.ID); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(91 * sessions.Day)
	sw := sweeper(e.DB.(store), e.Clock)
	m := &meetingStore{store: e.DB.(store), started: make(chan struct{}, 3)}
	sw.Store = m
	r := run(t, sw)
	if m.met.Load() < 3 || r.Purged != 1 || r.SoftDeleted != 2 {
		t.Errorf("%d first queries met the others (want 3); purged %d, soft-deleted %d", m.met.Load(), r.Purged, r.SoftDeleted)
	}
	if s := status(t, e, idle); s != "deleted" {
		t.Errorf("the idle session is %s", s)
	}
}
