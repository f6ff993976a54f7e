package firestoretest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
)

// TestReadsCounted: what the counter counts as read is what Firestore
// bills: each document a query returns, one for a query that returns none,
// and one per 1,000 index entries (at least one) for a count.
func TestReadsCounted(t *testing.T) {
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	ctx := context.Background()
	c := &firestoretest.Counter{}
	client, err := firestoretest.Dial(ctx, fmt.Sprintf("demo-reads-%d", time.Now().UnixNano()), c)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	col := client.Collection("things")
	for i := range 3 {
		if _, err := col.Doc(fmt.Sprint(i)).Set(ctx, map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want int64
	}{
		{"a query returning 3", func() error { _, err := col.Documents(ctx).GetAll(); return err }, 3},
		{"a query returning none", func() error { _, err := col.Where("n", "==", 9).Documents(ctx).GetAll(); return err }, 1},
		{"a count of 3", func() error { _, err := col.NewAggregationQuery().WithCount("n").Get(ctx); return err }, 1},
		{"a count of none", func() error {
			none := col.Where("n", "==", 9)
			_, err := none.NewAggregationQuery().WithCount("n").Get(ctx)
			return err
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.Snapshot()
			if err := tc.run(); err != nil {
				t.Fatal(err)
			}
			if got := c.Snapshot().Sub(before).Reads; got != tc.want {
				t.Errorf("%d reads counted, want %d", got, tc.want)
			}
		})
	}
}
