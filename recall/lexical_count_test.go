package recall_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatmemory/backend/recall"
)

// countingStore counts the counts of units asked of its store.
type countingStore struct {
	recall.Store
	counts atomic.Int64
}

func (s *countingStore) CountUnits(ctx context.Context, userID string) (int, error) {
	s.counts.Add(1)
	return s.Store.CountUnits(ctx, userID)
}

// TestUnitCountKept: a search counts the user's units (BM25's N) only
// when it has not counted them for that user within UnitCountTTL: a
// second search of alice's reads no count, a search of bob's does, and
// alice's after the TTL counts again; what is found does not change.
func TestUnitCountKept(t *testing.T) {
	w := newSearchWorld(t)
	store := &countingStore{Store: w.svc.Store}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	svc := &recall.Service{Embedder: topics{}, Store: store, Now: func() time.Time { return now }}
	ctx := context.Background()
	search := func(user string) int {
		t.Helper()
		got, err := svc.Search(ctx, user, "Bergen train", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	first := search("alice")
	for _, step := range []struct {
		name    string
		user    string
		advance time.Duration
		counts  int64
	}{
		{"alice again", "alice", time.Minute, 1},
		{"bob", "bob", 0, 2},
		{"alice within the TTL", "alice", recall.UnitCountTTL - 2*time.Minute, 2},
		{"alice past the TTL", "alice", 2 * time.Minute, 3},
	} {
		now = now.Add(step.advance)
		n := search(step.user)
		if got := store.counts.Load(); got != step.counts {
			t.Errorf("%s: %d counts of units in all, want %d", step.name, got, step.counts)
		}
		if step.user == "alice" && n != first {
			t.Errorf("%s: %d results, want %d as the first search", step.name, n, first)
		}
	}
	if first == 0 {
		t.Error("the first search found nothing")
	}
}
