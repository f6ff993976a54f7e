package retention_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/clock/clocktest"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestPurgesDoNotStarve: with more sessions to soft-delete than a run can
// handle, purges past their recovery window still make progress in every
// run (the kinds of work take turns), and the run reports its backlog.
func TestPurgesDoNotStarve(t *testing.T) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		e := storetest.NewEnv(t, open(t))
		ctx := context.Background()
		for i := 0; i < 60; i++ {
			e.NewSession(t, "idle")
		}
		for i := 0; i < 20; i++ {
			s := e.NewSession(t, "gone")
			e.Say(t, s, history.RoleUser, "bye")
			storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "gone", s.ID))
		}
		e.Clock.Advance(31 * sessions.Day)
		sw := sweeper(e.DB.(store), e.Clock)
		var ticks atomic.Int64 // each look at the clock costs a second of a 30 s budget
		sw.Budget = 30 * time.Second
		sw.Elapsed = func(time.Time) time.Duration { return time.Duration(ticks.Add(1)) * time.Second }
		r, err := sw.Run(ctx, false)
		if err != nil || r.Complete || r.Purged == 0 || r.SoftDeleted == 0 {
			t.Fatalf("a run short of time: %+v %v", r, err)
		}
		if r.Backlog == nil || r.Backlog.ToPurge != 20-r.Purged || r.Backlog.ToSoftDelete != 60-r.SoftDeleted || r.BacklogChange != nil {
			t.Errorf("backlog after the first run: %+v", r.Backlog)
		}
		sw.Elapsed, sw.Budget = nil, time.Minute
		r2 := run(t, sw)
		if r2.Backlog == nil || r2.Backlog.Total() != 0 || r2.BacklogChange == nil || *r2.BacklogChange != -r.Backlog.Total() {
			t.Errorf("backlog after the second run: %+v change %v", r2.Backlog, r2.BacklogChange)
		}
		if r.Purged+r2.Purged != 20 || r.SoftDeleted+r2.SoftDeleted != 60 {
			t.Errorf("the two runs purged %d+%d and soft-deleted %d+%d", r.Purged, r2.Purged, r.SoftDeleted, r2.SoftDeleted)
		}
	})
}

// TestDryRunSince: a dry run names, for each session, the date it entered
// its status, besides the date the action became due.
func TestDryRunSince(t *testing.T) {
	e := storetest.NewEnv(t, inprocdb.New())
	ctx := context.Background()
	idle := e.NewSession(t, "u")
	e.Clock.Advance(sessions.Day)
	arch := storetest.Must[*sessions.Session](t)(e.Sessions.Archive(ctx, "u", e.NewSession(t, "u").ID))
	e.Clock.Advance(sessions.Day)
	del := storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "u", e.NewSession(t, "u").ID))
	e.Clock.Advance(100 * sessions.Day)
	r, err := sweeper(e.DB.(store), e.Clock).Run(ctx, true)
	if err != nil || len(r.Planned) != 3 {
		t.Fatalf("dry run: %+v %v", r, err)
	}
	want := map[string]time.Time{idle.ID: idle.LastActivityAt, arch.ID: *arch.ArchivedAt, del.ID: *del.DeletedAt}
	for _, a := range r.Planned {
		if !a.Since.Equal(want[a.SessionID]) || a.ExpiresAt.Equal(a.Since) {
			t.Errorf("%s %s: since %s (want %s), due %s", a.From, a.SessionID, a.Since, want[a.SessionID], a.ExpiresAt)
		}
	}
}

// TestKilledMidPurge: a sweep killed while purging many sessions at once
// leaves purge markers; once their lease has run out, two sweeps started
// together finish every purge, each counted once: over all runs, the
// documents reported deleted are exactly the documents there were.
func TestKilledMidPurge(t *testing.T) {
	t.Parallel()
	client, _ := emulatortest.Firestore(t)
	lease := clocktest.NewClock(time.Now())
	db := firestoredb.New(client, firestoredb.Clock(lease.Now), firestoredb.PurgeLease(time.Minute))
	e := storetest.NewEnv(t, db)
	ctx := context.Background()
	const n, msgs = 40, 20
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := e.NewSession(t, fmt.Sprint("user", i%5))
			drafts := make([]history.Draft, msgs)
			for j := range drafts {
				drafts[j] = history.Draft{Role: history.RoleUser, Content: fmt.Sprint("message ", j)}
			}
			storetest.Must[[]history.Message](t)(e.Append(ctx, s, "", drafts...))
			storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, s.UserID, s.ID))
		}()
	}
	wg.Wait()
	const perSession = 1 + msgs + 2 // the session, its messages, its context head and page
	e.Clock.Advance(31 * sessions.Day)

	// Killed: the third user's forgetting (purges forget once a user: 5
	// here) cancels the run; the purges in flight with it stop wherever
	// they are.
	kctx, kill := context.WithCancel(ctx)
	sw := sweeper(db, e.Clock)
	sw.PageSize = 100
	var forgets atomic.Int64
	sw.Forget = func(ctx context.Context, _ string, _ []string) error {
		if forgets.Add(1) == 3 {
			kill()
		}
		return ctx.Err()
	}
	killed, err := sw.Run(kctx, false)
	if err != nil || killed.Complete {
		t.Fatalf("the killed run: %+v %v", killed, err)
	}
	pending, err := db.CountPendingPurges(ctx)
	if err != nil || pending == 0 {
		t.Fatalf("no purge was cut off (%d pending, %v): the test killed nothing", pending, err)
	}
	// Within the lease, another sweep leaves those purges alone.
	sw.Forget = nil
	early := run(t, sw)
	if early.ResumedPurges != 0 || early.PurgesBusy != pending {
		t.Errorf("a sweep within the lease: %+v", early)
	}
	// What the cut-off purges left: the two sweeps below must report
	// exactly this many documents deleted between them.
	left := 0
	for _, group := range []string{firestoredb.MessagesCollection, firestoredb.ContextCollection} {
		docs, err := client.CollectionGroup(group).Select().Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		left += len(docs)
	}
	lease.Advance(2 * time.Minute)
	var reports [2]*retention.Report
	for i := range reports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i] = run(t, sweeper(db, e.Clock))
		}()
	}
	wg.Wait()
	if got := reports[0].ResumedPurges + reports[1].ResumedPurges; got != pending {
		t.Errorf("%d purges resumed, %d were cut off", got, pending)
	}
	if got := reports[0].DocumentsDeleted + reports[1].DocumentsDeleted; got != left {
		t.Errorf("the two sweeps reported %d and %d documents deleted; the cut-off purges had left %d",
			reports[0].DocumentsDeleted, reports[1].DocumentsDeleted, left)
	}
	// Over all runs nothing is counted twice. (Deletes the server applied
	// while the kill cut their answers off go uncounted, never counted again.)
	total := killed.DocumentsDeleted + early.DocumentsDeleted + reports[0].DocumentsDeleted + reports[1].DocumentsDeleted
	if total > n*perSession {
		t.Errorf("documents reported deleted: %d (killed %d, early %d, then %d and %d), there were %d",
			total, killed.DocumentsDeleted, early.DocumentsDeleted, reports[0].DocumentsDeleted, reports[1].DocumentsDeleted, n*perSession)
	}
	for _, group := range []string{firestoredb.SessionsCollection, firestoredb.PurgesCollection} {
		if docs, _ := client.Collection(group).Documents(ctx).GetAll(); len(docs) != 0 {
			t.Errorf("%d documents left in %s", len(docs), group)
		}
	}
	for _, group := range []string{firestoredb.MessagesCollection, firestoredb.ContextCollection} {
		if docs, _ := client.CollectionGroup(group).Documents(ctx).GetAll(); len(docs) != 0 {
			t.Errorf("%d orphans left in %s", len(docs), group)
		}
	}
}
