package firestoretest

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Faults injects the failures of a network between the server and
// Firestore into a client's gRPC traffic, as a proxy between them would:
// RPCs refused before they are sent, commits sent whose answer is lost
// (so the server cannot know whether they landed), streams cut after their
// first message, and delays. Each rate is a probability per RPC; nothing
// is injected until Enable(true).
type Faults struct {
	Fail      float64 // refused before sending: UNAVAILABLE, ABORTED or DEADLINE_EXCEEDED
	Ambiguous float64 // commits sent, their answer replaced by UNAVAILABLE or DEADLINE_EXCEEDED
	Cut       float64 // streams (reads, queries) cut by UNAVAILABLE after their first message
	Delay     float64 // delayed by MinDelay to MaxDelay before sending
	MinDelay  time.Duration
	MaxDelay  time.Duration

	on                            atomic.Bool
	lose                          atomic.Int64 // commits whose answer to lose next, whatever the rates
	mu                            sync.Mutex
	loseCode                      codes.Code
	rng                           *rand.Rand
	failed, ambiguous, cut, slept atomic.Int64
	rpcs, commits, streams        atomic.Int64
}

// FaultCounts says how many faults of each kind were injected.
type FaultCounts struct {
	RPCs, Commits, Streams       int64 // seen while injection was on
	Failed, Ambiguous, Cut, Late int64
}

// LoseCommits makes the answers of the next n commits lost (with code c,
// UNAVAILABLE or DEADLINE_EXCEEDED), whether or not injection is on.
func (f *Faults) LoseCommits(n int64, c codes.Code) {
	f.mu.Lock()
	f.loseCode = c
	f.mu.Unlock()
	f.lose.Store(n)
}

// Enable turns injection on or off.
func (f *Faults) Enable(on bool) { f.on.Store(on) }

// Injected returns how many faults were injected so far.
func (f *Faults) Injected() FaultCounts {
	return FaultCounts{RPCs: f.rpcs.Load(), Commits: f.commits.Load(), Streams: f.streams.Load(), Failed: f.failed.Load(), Ambiguous: f.ambiguous.Load(), Cut: f.cut.Load(), Late: f.slept.Load()}
}

func (f *Faults) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := f.before(ctx); err != nil {
		return err
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	if strings.HasSuffix(method, "/Commit") && f.on.Load() {
		f.commits.Add(1)
	}
	if err == nil && strings.HasSuffix(method, "/Commit") && f.lose.Add(-1) >= 0 {
		f.ambiguous.Add(1)
		f.mu.Lock()
		defer f.mu.Unlock()
		return status.Error(f.loseCode, "injected fault: the commit's answer was lost")
	}
	if err == nil && strings.HasSuffix(method, "/Commit") && f.roll(f.Ambiguous) {
		f.ambiguous.Add(1)
		c := []codes.Code{codes.Unavailable, codes.DeadlineExceeded}[f.pick(2)]
		return status.Error(c, "injected fault: the commit's answer was lost")
	}
	return err
}

func (f *Faults) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if err := f.before(ctx); err != nil {
		return nil, err
	}
	s, err := streamer(ctx, desc, cc, method, opts...)
	if f.on.Load() {
		f.streams.Add(1)
	}
	if err != nil || !f.roll(f.Cut) {
		return s, err
	}
	f.cut.Add(1)
	return &cutStream{ClientStream: s}, nil
}

// before is what happens to an RPC before it is sent: a delay, or a
// refusal (returned).
func (f *Faults) before(ctx context.Context) error {
	if f.on.Load() {
		f.rpcs.Add(1)
	}
	if f.roll(f.Delay) {
		f.slept.Add(1)
		d := f.MinDelay + time.Duration(f.pick(int(f.MaxDelay-f.MinDelay)+1))
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if f.roll(f.Fail) {
		f.failed.Add(1)
		c := []codes.Code{codes.Unavailable, codes.Aborted, codes.DeadlineExceeded}[f.pick(3)]
		return status.Error(c, "injected fault: refused before sending")
	}
	return nil
}

// roll reports true with probability p, if injection is on.
func (f *Faults) roll(p float64) bool {
	if f == nil || p <= 0 || !f.on.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng == nil {
		f.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return f.rng.Float64() < p
}

func (f *Faults) pick(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

// cutStream delivers its first message, then fails as a dropped
// connection does.
type cutStream struct {
	grpc.ClientStream
	got int
}

func (s *cutStream) RecvMsg(m any) error {
	if s.got >= 1 {
		return status.Error(codes.Unavailable, "injected fault: the stream was cut")
	}
	s.got++
	return s.ClientStream.RecvMsg(m)
}
