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
//
// At most Max jobs run at once and Queue more wait for a place: a burst
// of turns does not start a model call, a search index write and a
// summary for every one of them together. A job beyond both is not run
// here (Left counts them): it stays in the outbox, where the trigger or
// the sweep runs it once the turn's lease on it runs out.
type Background struct {
	Max   int // jobs running at once; 0: DefaultMaxJobs
	Queue int // jobs waiting for a place; 0: DefaultQueuedJobs

	mu      sync.Mutex
	pending int           // running or waiting
	slots   chan struct{} // a place for each running job
	idle    *sync.Cond    // on mu: pending fell to 0
	left    int
}

// The bounds of a Background left at its zero value.
const (
	DefaultMaxJobs    = 32
	DefaultQueuedJobs = 1000
)

// Run does w on a goroutine of its own, detached from ctx's cancellation
// (the request's context ends with its response), unless Max jobs run and
// Queue wait already.
func (b *Background) Run(ctx context.Context, w Work) {
	ctx = context.WithoutCancel(ctx)
	slots, ok := b.admit()
	if !ok {
		return
	}
	go func() {
		defer b.done()
		slots <- struct{}{}
		defer func() { <-slots }()
		w.Do(ctx)
	}()
}

// admit counts a job in, or counts it left to the outbox when the bounds
// are full.
func (b *Background) admit() (chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.slots == nil {
		b.slots = make(chan struct{}, orDefault(b.Max, DefaultMaxJobs))
	}
	if b.pending >= cap(b.slots)+orDefault(b.Queue, DefaultQueuedJobs) {
		b.left++
		return nil, false
	}
	b.pending++
	return b.slots, true
}

func orDefault(n, d int) int {
	if n > 0 {
		return n
	}
	return d
}

func (b *Background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending--; b.pending == 0 && b.idle != nil {
		b.idle.Broadcast()
	}
}

// Left is how many jobs Run left to the trigger or the sweep, the bounds
// being full.
func (b *Background) Left() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

// Wait returns once no job is running or waiting: before a server closes
// its store, and in tests that read a job's effects. Jobs may start
// meanwhile (a request still open); Wait waits for those too.
func (b *Background) Wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.idle == nil {
		b.idle = sync.NewCond(&b.mu)
	}
	for b.pending > 0 {
		b.idle.Wait()
	}
}
