package systemtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/retention"
)

// TestSweepReportsEveryPhase: a scheduled sweep's report shows every
// phase of the run, the deleted-account backstop and the roll-up of
// histories beside the retention work included, each with what it did
// and when it began: the backstop at the run's start, the roll-up after
// it; its total is the run's wall time, every phase ends within it, and
// the phases add up to it and the time they overlapped.
func TestSweepReportsEveryPhase(t *testing.T) {
	h := newHarnessOn(t, "memory", func(c *app.Config) { c.LongTermMemory = true })
	ctx := context.Background()
	alice, bob, carol := h.signUp(), h.signUp(), h.signUp()
	h.seedUser(alice)
	h.seedUser(bob)
	h.deleteUser(bob.uid) // and no event came
	h.clock.Advance(31 * 24 * time.Hour)
	h.seedUser(carol) // active today: her history is rolled up

	start := time.Now()
	r, err := h.app.Sweep(ctx, false)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var sum int64
	at := map[string]map[string]int{}
	phase := map[string]retention.Phase{}
	for _, p := range r.Phases {
		names, sum = append(names, p.Name), sum+p.Ms
		at[p.Name], phase[p.Name] = p.Counts, p
		if p.StartMs < 0 || p.StartMs+p.Ms > r.DurationMs+1 {
			t.Errorf("phase %s from %d ms for %d ms, past the run's %d ms", p.Name, p.StartMs, p.Ms, r.DurationMs)
		}
	}
	if b, ro := phase[retention.PhaseBackstop], phase[retention.PhaseRollUp]; b.StartMs > 1 || ro.StartMs < b.StartMs+b.Ms-1 || ro.StartMs > b.StartMs+b.Ms+1 {
		t.Errorf("backstop from %d ms for %d ms, roll-up from %d ms; want the backstop at the start, the roll-up after it", b.StartMs, b.Ms, ro.StartMs)
	}
	want := []string{retention.PhaseDueJobs, retention.PhaseResumePurges, retention.PhasePurge, retention.PhaseSoftDelete, retention.PhaseTrim,
		retention.PhaseBacklog, retention.PhaseBackstop, retention.PhaseRollUp, retention.PhaseAttachments}
	if !slices.Equal(names, want) {
		t.Fatalf("phases %v, want %v", names, want)
	}
	// Alice's and bob's sessions were idle for 31 days; meanwhile the
	// backstop asked Auth about both accounts in one call and erased
	// bob's: his session was soft-deleted first, or erased first (then
	// the soft-delete skips it, or no longer finds it).
	if c := at[retention.PhaseSoftDelete]; r.SoftDeleted < 1 || r.SoftDeleted > 2 || c["sessionsSoftDeleted"] != r.SoftDeleted || c["failed"] != 0 {
		t.Errorf("soft-deleted %d, phase counts %v; want alice's, and bob's unless erased first", r.SoftDeleted, c)
	}
	h.nothingLeftOf(t, bob)
	if c := at[retention.PhaseBackstop]; c["accountsChecked"] != 2 || c["accountsErased"] != 1 || c["authCalls"] != 1 || c["complete"] != 1 {
		t.Errorf("backstop counts %v; want 2 checked, 1 erased, 1 Auth call", c)
	}
	// Carol's new session becomes an episode of her history: listed once
	// (her roll-up takes it from the listing, with no query of its own),
	// written once.
	if c := at[retention.PhaseRollUp]; c["users"] < 1 || c["written"] < 1 || c["listed"] < 1 || c["sessionsRead"] != 0 || c["failed"] != 0 || c["complete"] != 1 {
		t.Errorf("roll-up counts %v", c)
	}
	total := time.Duration(r.DurationMs) * time.Millisecond
	if d := sum - r.OverlapMs - r.DurationMs; d > 1 || d < -int64(len(want)) || r.OverlapMs < 0 || total > wall || wall-total > 20*time.Millisecond {
		t.Errorf("phases add up to %d ms, overlapping %d ms, of a total of %v; the run took %v", sum, r.OverlapMs, total, wall)
	}

	// A dry run shows the same phases, and does neither of the last two.
	dry, err := h.app.Sweep(ctx, true)
	if err != nil || len(dry.Phases) != len(want) || dry.Phases[6].Counts != nil || dry.Phases[7].Counts != nil {
		t.Errorf("dry run: %+v, %v", dry.Phases, err)
	}
}

// TestSweepCountsRoundTrips: each phase of a sweep's report counts the
// round trips to Firestore it made, they add up to the run's, which are
// every one the client made meanwhile; and the purges of one user's
// sessions forget them in long-term memory once, not once a session: the
// purge phase's round trips grow by a few a session, not by a forgetting
// (a read, a query and a transaction: about 5 more) each.
func TestSweepCountsRoundTrips(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.LongTermMemory = true })
	ctx := context.Background()
	alice := h.signUp()
	h.do("PATCH", "/memory/profile", alice.token, map[string]any{"work": "Beekeeper."}).want(t, 200) // a memory to forget from
	purgeRPCs := map[int]int64{}
	for _, n := range []int{2, 8} {
		for range n {
			id := h.newSession(alice.token, map[string]any{"title": "bees"})
			h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "I keep bees."}).want(t, 200)
			h.idle()
			h.do("DELETE", "/sessions/"+id, alice.token, nil).want(t, 200)
		}
		h.clock.Advance(31 * 24 * time.Hour)
		before := h.counter.Snapshot().RoundTrips
		r, err := h.app.Sweep(ctx, false)
		if err != nil || r.Purged != n {
			t.Fatalf("purged %d of %d: %v", r.Purged, n, err)
		}
		var sum int64
		for _, p := range r.Phases {
			sum += p.RPCs
			if p.Name == retention.PhasePurge {
				purgeRPCs[n] = p.RPCs
			}
		}
		if made := h.counter.Snapshot().RoundTrips - before; sum != r.RPCs || r.RPCs != made || purgeRPCs[n] == 0 {
			t.Errorf("phases count %d round trips, the report %d, the client made %d (purge: %d)", sum, r.RPCs, made, purgeRPCs[n])
		}
	}
	if per := float64(purgeRPCs[8]-purgeRPCs[2]) / 6; per > 7 {
		t.Errorf("a purge costs %.1f round trips more a session (%d for 2, %d for 8)", per, purgeRPCs[2], purgeRPCs[8])
	}
}
