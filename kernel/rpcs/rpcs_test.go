package rpcs_test

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/kernel/rpcs"
)

// TestCounter: RPCs are counted in the context's counter and its
// children's; a context without one counts nowhere.
func TestCounter(t *testing.T) {
	ctx, c := rpcs.With(context.Background())
	rpcs.Add(ctx)
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	rpcs.Add(child)
	rpcs.Add(context.Background())
	if c.Load() != 2 || rpcs.Of(child) != c {
		t.Errorf("counted %d, want 2", c.Load())
	}
	if rpcs.Of(context.Background()).Load() != 0 {
		t.Error("a context without a counter counts")
	}
}
