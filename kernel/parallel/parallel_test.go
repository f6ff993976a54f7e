package parallel

import (
	"sync/atomic"
	"testing"
)

// TestEach: every index runs once, never more than workers at a time.
func TestEach(t *testing.T) {
	var running, peak, sum atomic.Int64
	seen := make([]atomic.Int32, 50)
	Each(50, 4, func(i int) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		seen[i].Add(1)
		sum.Add(int64(i))
		running.Add(-1)
	})
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("index %d ran %d times", i, seen[i].Load())
		}
	}
	if peak.Load() > 4 || sum.Load() != 49*50/2 {
		t.Errorf("peak %d, sum %d", peak.Load(), sum.Load())
	}
	Each(0, 4, func(int) { t.Fatal("ran with n 0") })
}
