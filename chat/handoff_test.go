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
