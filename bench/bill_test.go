package bench

import (
	"context"
	"maps"
	"os"
	"testing"

	"github.com/chatmemory/backend/history"
)

// TestBillScenariosExercise: as the test model receives them, the recall
// scenarios' requests carry recalled excerpts and the learning ones'
// learned facts (short conversations, a small budget so that recall from
// this session has something outside the context); each scenario also
// reports a cached share.
func TestBillScenariosExercise(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" { // CI runs them always
		t.Skip("runs conversations")
	}
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range BillScenarios() {
		_, recalls := sc.Context["recall"]
		if !recalls && !sc.Learns {
			continue
		}
		sc.Context = maps.Clone(sc.Context)
		if sc.Context == nil {
			sc.Context = map[string]any{}
		}
		sc.Context["budgetTokens"] = 2000
		t.Run(sc.Name, func(t *testing.T) {
			r, err := runBillScenario(context.Background(), sc, false, 16, tok)
			if err != nil {
				t.Fatal(err)
			}
			if (recalls && r.RecallTurns == 0) || (sc.Learns && r.FactTurns == 0) || r.Cached == 0 {
				t.Errorf("%d turns with recalled excerpts, %d with facts, %d cached tokens", r.RecallTurns, r.FactTurns, r.Cached)
			}
			t.Logf("%d turns with recalled excerpts, %d with facts, cacheable %.1f%%", r.RecallTurns, r.FactTurns, 100*r.Share)
		})
	}
}

// TestBillTargets: over BillTurns turns through POST /chat on the
// in-process store, with the test model's cache, the scenarios that
// missed the targets before (a window of 10 dropping 5 at a time,
// summary_buffer at 4,000 tokens compacting at 60% down to 10%, recall at
// 16,000 tokens with the excerpts of each turn after its history) meet
// them; a window loses its whole prefix only at its steps, and GET
// /usage agrees with the session's usage (runBillScenario checks it).
func TestBillTargets(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" { // CI runs them always
		t.Skip("runs conversations")
	}
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario string
		misses   int // turns past the first 10 with nothing cached, at most
	}{
		{"window, 10 exchanges", 11},               // one each 11 turns
		{"summary_buffer, 4,000-token budget", 15}, // compactions
		{`recall "session", 16,000-token budget`, 4},
		{`recall "all", 16,000-token budget`, 4},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			sc, ok := billScenario(tc.scenario)
			if !ok {
				t.Fatalf("no scenario %q", tc.scenario)
			}
			r, err := runBillScenario(context.Background(), sc, false, BillTurns, tok)
			if err != nil {
				t.Fatal(err)
			}
			misses := 0
			for _, u := range r.uses[10:] {
				if u.Cached == 0 {
					misses++
				}
			}
			if r.Share < sc.Target || misses > tc.misses {
				t.Errorf("cacheable share %.1f%%, want at least %.0f%%; %d turns with nothing cached, want at most %d",
					100*r.Share, 100*sc.Target, misses, tc.misses)
			}
			t.Logf("cacheable share %.1f%%, %d turns with nothing cached", 100*r.Share, misses)
		})
	}
}

// billScenario is the scenario named name.
func billScenario(name string) (BillScenario, bool) {
	for _, sc := range BillScenarios() {
		if sc.Name == name {
			return sc, true
		}
	}
	return BillScenario{}, false
}
