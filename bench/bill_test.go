package bench

import (
	"context"
	"maps"
	"testing"

	"github.com/chatmemory/backend/history"
)

// TestBillScenariosExercise: as the test model receives them, the recall
// scenarios' requests carry recalled excerpts and the learning ones'
// learned facts (short conversations, a small budget so that recall from
// this session has something outside the context); each scenario also
// reports a cached share.
func TestBillScenariosExercise(t *testing.T) {
	if testing.Short() {
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
