package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// slowStore takes a known time for each kind of the sweep's work, so that
// each phase's time can be told apart from the others'.
type slowStore struct {
	store
	purge, softDelete, count time.Duration
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
	return r.store.CountExpired(ctx, st, now)
}

// TestReportPhases: a run's report gives every phase in order, each with
// its own time (at least what its work took) and what it did, adding up
// to the report's counts; the phases add up to the total, and the total is
// the run's wall time.
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
	sw.Store = slowStore{store: e.DB.(store), purge: 30 * time.Millisecond, softDelete: 20 * time.Millisecond, count: 10 * time.Millisecond}
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
	if p := at[retention.PhaseBacklog].Counts; p == nil || p["toPurge"] != 0 || p["toSoftDelete"] != 0 {
		t.Errorf("backlog phase counts %v", p)
	}
	// Each phase holds its own work's time: two pages of purges, two
	// pages of soft-deletes (a batch a user, at once), three counts.
	for name, least := range map[string]time.Duration{retention.PhasePurge: 2 * 30 * time.Millisecond,
		retention.PhaseSoftDelete: 2 * 20 * time.Millisecond, retention.PhaseBacklog: 3 * 10 * time.Millisecond} {
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
