package chat

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

type countWork struct{ n *atomic.Int64 }

func (w countWork) Do(ctx context.Context) {
	if ctx.Err() != nil {
		return // the request's cancellation reached the job
	}
	time.Sleep(5 * time.Millisecond)
	w.n.Add(1)
}

// TestBackground: Run returns before the work is done, the work outlives
// the request's context, and Wait returns once every job started before
// or while it waits is done; Now does the work before it returns.
func TestBackground(t *testing.T) {
	var n atomic.Int64
	var b Background
	b.Wait() // nothing running
	ctx, cancel := context.WithCancel(context.Background())
	for range 20 {
		b.Run(ctx, countWork{&n})
	}
	cancel()
	if got := n.Load(); got == 20 {
		t.Fatalf("Run waited for the work")
	}
	stop := make(chan struct{})
	go func() { // jobs started while Wait waits
		for range 10 {
			b.Run(context.Background(), countWork{&n})
		}
		close(stop)
	}()
	<-stop
	b.Wait()
	if got := n.Load(); got != 30 {
		t.Fatalf("after Wait %d of 30 jobs done", got)
	}
	Now{}.Run(context.Background(), countWork{&n})
	if got := n.Load(); got != 31 {
		t.Fatalf("Now returned before its work: %d", got)
	}
}

type gateWork struct {
	gate              chan struct{}
	running, most, ok *atomic.Int64
}

func (w gateWork) Do(context.Context) {
	n := w.running.Add(1)
	for m := w.most.Load(); n > m && !w.most.CompareAndSwap(m, n); m = w.most.Load() {
	}
	<-w.gate
	w.running.Add(-1)
	w.ok.Add(1)
}

// TestBackgroundBounds: at most Max jobs run at once, Queue more wait,
// and the rest are left (to the trigger or the sweep), counted; the
// waiting ones run once places free up.
func TestBackgroundBounds(t *testing.T) {
	for _, c := range []struct{ max, queue, jobs, left int }{
		{2, 3, 10, 5},
		{1, 0 /* default */, 5, 0},
		{4, 1, 4, 0},
	} {
		var running, most, ok atomic.Int64
		b := Background{Max: c.max, Queue: c.queue}
		gate := make(chan struct{})
		for range c.jobs {
			b.Run(context.Background(), gateWork{gate, &running, &most, &ok})
		}
		if b.Left() != c.left {
			t.Errorf("%+v: left %d", c, b.Left())
		}
		time.Sleep(20 * time.Millisecond) // let the admitted ones start
		if got := most.Load(); got > int64(c.max) {
			t.Errorf("%+v: %d ran at once", c, got)
		}
		close(gate)
		b.Wait()
		if got, want := ok.Load(), int64(c.jobs-c.left); got != want {
			t.Errorf("%+v: %d done, want %d", c, got, want)
		}
	}
}
