package bench

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/history"
)

// TestRecallQuality: the offline stand-in finds the right exchange among
// the first 5 for at least 80% of the fixture's queries, in search and in
// recall for a turn.
func TestRecallQuality(t *testing.T) {
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	q, err := MeasureQuality(context.Background(), StandIn(), tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(q)
	if q.Queries != 40 || q.Exchanges != 200 {
		t.Fatalf("the fixture: %d queries over %d exchanges, want 40 over 200", q.Queries, q.Exchanges)
	}
	if q.SearchRecallAt5 < 0.8 || q.RecallRecallAt5 < 0.8 {
		t.Errorf("recall@5 under 0.8: %s", q)
	}
}
