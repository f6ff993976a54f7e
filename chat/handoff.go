package chat

import (
	"context"
	"sync"
)

// Runner runs the work that follows a reply (see Job): the turn hands it
// over once its reply is delivered, and returns. Whatever a Runner does,
// a job it never finishes is run by the store's trigger or the sweep once
// the turn's lease on it runs out.
type Runner interface {
	Run(ctx context.Context, w Work)
}

// Work is what a Runner runs: a reply's job (afterReply).
type Work interface {
	Do(ctx context.Context)
}

// Now runs each job at once, on the turn's goroutine: the turn returns
// after it. For tools and tests that read the job's effects right after
// a turn; a server uses Background.
type Now struct{}

// Run does w.
func (Now) Run(ctx context.Context, w Work) { w.Do(ctx) }

// Background runs each job on a goroutine of its own, so a turn ends at
// its reply: the request is answered and closed while the title, the
// index entry, learning and a summary are done beside the next requests.
// On Cloud Functions (2nd gen) an instance's CPU may be throttled once it
// answers no request, so such a goroutine can stall or die with the
// instance; the job recorded in the reply's commit is then run by the
// trigger or the sweep (see Job).
type Background struct {
	mu      sync.Mutex
	running int
	idle    *sync.Cond // on mu: running fell to 0
}

// Run does w on a goroutine of its own, detached from ctx's cancellation
// (the request's context ends with its response).
func (b *Background) Run(ctx context.Context, w Work) {
	ctx = context.WithoutCancel(ctx)
	b.mu.Lock()
	b.running++
	b.mu.Unlock()
	go func() {
		defer b.done()
		w.Do(ctx)
	}()
}

func (b *Background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running--; b.running == 0 && b.idle != nil {
		b.idle.Broadcast()
	}
}

// Wait returns once no job is running: before a server closes its store,
// and in tests that read a job's effects. Jobs may start meanwhile (a
// request still open); Wait waits for those too.
func (b *Background) Wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idle == nil {
		b.idle = sync.NewCond(&b.mu)
	}
	for b.running > 0 {
		b.idle.Wait()
	}
}
