package retention_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock/clocktest"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// store is what a backend offers the sweep and the tests.
type store = storetest.Backend

var backends = storetest.Both

func sweeper(db store, clock *clocktest.Clock) *retention.Sweeper {
	sw := retention.NewSweeper(db)
	sw.Now = clock.Now
	sw.PageSize = 7 // several pages even in small tests
	return sw
}

func run(t *testing.T, sw *retention.Sweeper) *retention.Report {
	t.Helper()
	r, err := sw.Run(context.Background(), false)
	if err != nil || !r.Complete || r.Failed != 0 {
		t.Fatalf("sweep: %+v, %v", r, err)
	}
	return r
}

// status returns a session's status, or "gone" once purged.
func status(t *testing.T, e *storetest.Env, s *sessions.Session) string {
	t.Helper()
	got, err := e.Sessions.Get(context.Background(), s.UserID, s.ID)
	if errs.CodeOf(err) == errs.ENOTFOUND {
		return "gone"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(got.Status)
}

// TestBoundaries: each rule acts exactly at its period, not a second
// before; activity and restores postpone it; a session's own retention
// replaces the idle period.
func TestBoundaries(t *testing.T) {
	const day = sessions.Day
	type step struct {
		at   time.Duration // since the start
		want string
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, e *storetest.Env, s *sessions.Session)
		in    sessions.CreateInput
		steps []step
	}{
		{"ActiveIdle", nil, sessions.CreateInput{},
			[]step{{30*day - time.Second, "active"}, {30 * day, "deleted"}}},
		{"ActivityPostpones", func(t *testing.T, e *storetest.Env, s *sessions.Session) {
			e.Clock.Advance(20 * day)
			e.Say(t, s, history.RoleUser, "still here")
		}, sessions.CreateInput{},
			[]step{{30 * day, "active"}, {50*day - time.Second, "active"}, {50 * day, "deleted"}}},
		{"OwnRetention", nil, sessions.CreateInput{RetentionDays: 7},
			[]step{{7*day - time.Second, "active"}, {7 * day, "deleted"}}},
		{"Archived", func(t *testing.T, e *storetest.Env, s *sessions.Session) {
			storetest.Must[*sessions.Session](t)(e.Sessions.Archive(context.Background(), s.UserID, s.ID))
		}, sessions.CreateInput{},
			[]step{{90*day - time.Second, "archived"}, {90 * day, "deleted"}}},
		{"RestorePostpones", func(t *testing.T, e *storetest.Env, s *sessions.Session) {
			storetest.Must[*sessions.Session](t)(e.Sessions.Archive(context.Background(), s.UserID, s.ID))
			e.Clock.Advance(10 * day)
			storetest.Must[*sessions.Session](t)(e.Sessions.Restore(context.Background(), s.UserID, s.ID))
		}, sessions.CreateInput{},
			[]step{{40*day - time.Second, "active"}, {40 * day, "deleted"}}},
		{"DeletedPurged", func(t *testing.T, e *storetest.Env, s *sessions.Session) {
			storetest.Must[*sessions.Session](t)(e.Sessions.Delete(context.Background(), s.UserID, s.ID))
		}, sessions.CreateInput{},
			[]step{{30*day - time.Second, "deleted"}, {30 * day, "gone"}}},
		{"SweptThenPurged", nil, sessions.CreateInput{},
			[]step{{30 * day, "deleted"}, {60*day - time.Second, "deleted"}, {60 * day, "gone"}}},
	}
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := storetest.NewEnv(t, open(t))
				s := storetest.Must[*sessions.Session](t)(e.Sessions.Create(context.Background(), "alice", c.in))
				e.Say(t, s, history.RoleUser, "hello")
				if c.setup != nil {
					c.setup(t, e, s)
				}
				sw := sweeper(e.DB.(store), e.Clock)
				for _, st := range c.steps {
					e.Clock.Set(storetest.Epoch.Add(st.at))
					run(t, sw)
					if got := status(t, e, s); got != st.want {
						t.Fatalf("at +%s: %s, want %s", st.at, got, st.want)
					}
				}
			})
		}
	})
}

// activityStore lets activity happen between the sweep's query and its write.
type activityStore struct {
	store
	between func(*sessions.Session)
}

func (r activityStore) ExpiredSessions(ctx context.Context, st sessions.Status, now time.Time, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	page, err := r.store.ExpiredSessions(ctx, st, now, after, limit)
	for _, s := range page {
		r.between(s)
	}
	return page, err
}

// TestActivityBetweenQueryAndWrite: a session that saw activity after the
// sweep found it is left alone, as the change re-checks it.
func TestActivityBetweenQueryAndWrite(t *testing.T) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		e := storetest.NewEnv(t, open(t))
		busy, idle := e.NewSession(t, "alice"), e.NewSession(t, "alice")
		e.Clock.Advance(31 * sessions.Day)
		repo := activityStore{store: e.DB.(store), between: func(s *sessions.Session) {
			if s.ID == busy.ID {
				e.Say(t, busy, history.RoleUser, "I'm back")
			}
		}}
		sw := sweeper(e.DB.(store), e.Clock)
		sw.Store = repo
		r := run(t, sw)
		if r.SoftDeleted != 1 || r.Skipped != 1 || status(t, e, busy) != "active" || status(t, e, idle) != "deleted" {
			t.Errorf("report %+v; busy %s, idle %s", r, status(t, e, busy), status(t, e, idle))
		}
	})
}

func TestDryRunAndCancel(t *testing.T) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		e := storetest.NewEnv(t, open(t))
		a, d := e.NewSession(t, "alice"), e.NewSession(t, "alice")
		storetest.Must[*sessions.Session](t)(e.Sessions.Delete(context.Background(), "alice", d.ID))
		e.NewSession(t, "bob")
		e.Clock.Advance(31 * sessions.Day)
		sw := sweeper(e.DB.(store), e.Clock)
		r, err := sw.Run(context.Background(), true)
		if err != nil || !r.Complete || len(r.Planned) != 3 || r.SoftDeleted != 0 {
			t.Fatalf("dry run: %+v %v", r, err)
		}
		if status(t, e, a) != "active" || status(t, e, d) != "deleted" {
			t.Fatalf("a dry run changed something")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err = sw.Run(ctx, false)
		if err != nil || r.Complete {
			t.Fatalf("cancelled run: %+v %v", r, err)
		}
		r = run(t, sw)
		if r.SoftDeleted != 2 || r.Purged != 1 || status(t, e, a) != "deleted" || status(t, e, d) != "gone" {
			t.Errorf("real run: %+v", r)
		}
		if r := run(t, sw); r.SoftDeleted+r.Purged != 0 {
			t.Errorf("a second run changed more: %+v", r)
		}
	})
}

// world is a seeded population of labelled sessions.
type world struct {
	e      *storetest.Env
	client *firestore.Client
	labels map[string]string // session id → label
}

// seed creates sessions with 10 messages each, labelled by their fate:
// old active ones and old deleted ones expire by start+31d, the rest not.
func seed(t *testing.T, counts map[string]int) *world {
	client, _ := emulatortest.Firestore(t)
	e := storetest.NewEnv(t, firestoredb.New(client))
	w := &world{e: e, client: client, labels: map[string]string{}}
	var mu sync.Mutex
	make1 := func(kind string, i int) {
		ctx := context.Background()
		label := fmt.Sprintf("%s-%04d", kind, i)
		user := fmt.Sprintf("user%d", i%50)
		s := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, user, sessions.CreateInput{Metadata: sessions.Metadata{Topic: label}}))
		drafts := make([]history.Draft, 10)
		for j := range drafts {
			drafts[j] = history.Draft{Role: []history.Role{history.RoleUser, history.RoleAssistant}[j%2], Content: fmt.Sprintf("%s message %d", label, j)}
		}
		storetest.Must[[]history.Message](t)(e.Append(ctx, s, "", drafts...))
		switch kind {
		case "old-deleted":
			storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, user, s.ID))
		case "old-archived":
			storetest.Must[*sessions.Session](t)(e.Sessions.Archive(ctx, user, s.ID))
		}
		mu.Lock()
		w.labels[s.ID] = label
		mu.Unlock()
	}
	parallel := func(kinds ...string) {
		jobs := make(chan func(), 64)
		var wg sync.WaitGroup
		for k := 0; k < 16; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range jobs {
					j()
				}
			}()
		}
		for _, kind := range kinds {
			for i := 0; i < counts[kind]; i++ {
				jobs <- func() { make1(kind, i) }
			}
		}
		close(jobs)
		wg.Wait()
	}
	parallel("old-active", "old-deleted", "old-archived")
	e.Clock.Advance(10 * sessions.Day)
	parallel("fresh")
	e.Clock.Set(storetest.Epoch.Add(31 * sessions.Day))
	return w
}

// state reads the whole project: each label's status ("gone" once purged)
// and how many documents remain under its session.
func (w *world) state(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, label := range w.labels {
		out[label] = "gone"
	}
	snaps, err := w.client.Collection(firestoredb.SessionsCollection).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	under := map[string]int{}
	for _, group := range []string{firestoredb.MessagesCollection, firestoredb.ContextCollection, firestoredb.CompactionsCollection} {
		docs, err := w.client.CollectionGroup(group).Select().Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			under[d.Ref.Parent.Parent.ID]++
		}
	}
	for _, snap := range snaps {
		st, _ := snap.DataAt("status")
		out[w.labels[snap.Ref.ID]] = fmt.Sprintf("%v/%d", st, under[snap.Ref.ID])
		delete(under, snap.Ref.ID)
	}
	for id, n := range under {
		out["orphan "+id] = fmt.Sprint(n)
	}
	markers, err := w.client.Collection(firestoredb.PurgesCollection).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(markers) > 0 {
		out["purge markers"] = fmt.Sprint(len(markers))
	}
	return out
}

func summarize(state map[string]string) map[string]int {
	out := map[string]int{}
	for label, st := range state {
		if len(label) > 5 {
			out[label[:len(label)-5]+" → "+st]++
		}
	}
	return out
}

// TestSweep2000: a sweep over 2,000 sessions of 10 messages each removes
// every expired one completely and leaves every other session and message
// as it was.
func TestSweep2000(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"old-active": 800, "old-deleted": 300, "old-archived": 300, "fresh": 600}
	w := seed(t, counts)
	sw := sweeper(w.e.DB.(store), w.e.Clock)
	sw.PageSize = 100
	r := run(t, sw)
	if r.SoftDeleted != 800 || r.Purged != 300 || r.DocumentsDeleted != 300*12 {
		t.Errorf("report %+v", r)
	}
	got := summarize(w.state(t))
	want := map[string]int{
		"old-active → deleted/11":    800, // soft-deleted: 10 messages and the tail document stay
		"old-deleted → gone":         300,
		"old-archived → archived/11": 300,
		"fresh → active/11":          600,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the sweep:\n got %v\nwant %v", got, want)
	}
	if r := run(t, sw); r.SoftDeleted+r.Purged+r.DocumentsDeleted != 0 {
		t.Errorf("a second sweep changed more: %+v", r)
	}
}

// TestSweepInterruptedAndConcurrent: a sweep stopped half-way and run
// again, and two sweeps at once, end exactly where one clean sweep does.
func TestSweepInterruptedAndConcurrent(t *testing.T) {
	t.Parallel()
	// Here, not in the goroutines that seed: only the test's own may skip.
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	counts := map[string]int{"old-active": 60, "old-deleted": 40, "old-archived": 20, "fresh": 30}
	var clean, interrupted, concurrent *world
	var wg sync.WaitGroup
	for _, w := range []**world{&clean, &interrupted, &concurrent} {
		wg.Add(1)
		go func() { defer wg.Done(); *w = seed(t, counts) }()
	}
	wg.Wait()

	run(t, sweeper(clean.e.DB.(store), clean.e.Clock))
	want := clean.state(t)

	// Out of budget after 40 checks: each check of the (injected) elapsed
	// time advances it by a second, against a budget of 44 s.
	sw := sweeper(interrupted.e.DB.(store), interrupted.e.Clock)
	var ticks atomic.Int64
	sw.Budget = 44 * time.Second
	sw.Elapsed = func(time.Time) time.Duration { return time.Duration(ticks.Add(1)) * time.Second }
	r, err := sw.Run(context.Background(), false)
	if err != nil || r.Complete || r.SoftDeleted+r.Purged == 0 || r.SoftDeleted+r.Purged >= 100 {
		t.Fatalf("interrupted run: %+v %v", r, err)
	}
	sw.Elapsed, sw.Budget = nil, time.Minute
	run(t, sw)
	if got := interrupted.state(t); fmt.Sprint(summarize(got)) != fmt.Sprint(summarize(want)) || !sameFates(got, want) {
		t.Errorf("interrupted then resumed:\n got %v\nwant %v", summarize(got), summarize(want))
	}

	var reports [2]*retention.Report
	var errs [2]error
	for i := range reports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i], errs[i] = sweeper(concurrent.e.DB.(store), concurrent.e.Clock).Run(context.Background(), false)
		}()
	}
	wg.Wait()
	for i := range reports {
		if errs[i] != nil || !reports[i].Complete || reports[i].Failed != 0 {
			t.Errorf("concurrent sweep %d: %+v %v", i, reports[i], errs[i])
		}
	}
	if reports[0].SoftDeleted+reports[1].SoftDeleted != 60 || reports[0].Purged+reports[1].Purged != 40 {
		t.Errorf("together the sweeps did %+v and %+v", reports[0], reports[1])
	}
	if got := concurrent.state(t); !sameFates(got, want) {
		t.Errorf("concurrent:\n got %v\nwant %v", summarize(got), summarize(want))
	}
}

// sameFates compares two states label by label.
func sameFates(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}
