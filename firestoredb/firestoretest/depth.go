package firestoretest

import (
	"slices"
	"sync"
	"time"
)

// spans records when each RPC was sent and answered, to tell the round
// trips a caller waited for one after another from those that ran beside
// them (see Counter.Depth).
type spans struct {
	mu  sync.Mutex
	all []*span
}

type span struct{ start, end time.Time }

// maxSpans bounds the RPCs remembered (the oldest half is dropped).
const maxSpans = 100_000

// begin records an RPC sent now; the function it returns records its
// answer (once).
func (s *spans) begin() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) >= maxSpans {
		s.all = slices.Delete(s.all, 0, maxSpans/2)
	}
	p := &span{start: time.Now()}
	s.all = append(s.all, p)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if p.end.IsZero() {
			p.end = time.Now()
		}
	}
}

// Depth is the number of round trips made one after another between from
// and to: the longest chain of the RPCs sent in that time, each sent after
// the one before it was answered (an RPC not answered by to ends at to).
// RPCs that overlap in time ran beside each other and count once.
func (c *Counter) Depth(from, to time.Time) int {
	c.spans.mu.Lock()
	var in []span
	for _, p := range c.spans.all {
		s := *p
		if s.start.Before(from) || !s.start.Before(to) {
			continue
		}
		if s.end.IsZero() || s.end.After(to) {
			s.end = to
		}
		in = append(in, s)
	}
	c.spans.mu.Unlock()
	// The longest chain of intervals, each starting after the last ended,
	// is the most that do not overlap: take the one that ends first, then
	// the first to end of those starting after it, and so on.
	slices.SortFunc(in, func(a, b span) int { return a.end.Compare(b.end) })
	n, last := 0, time.Time{}
	for _, s := range in {
		if s.start.After(last) || n == 0 {
			n, last = n+1, s.end
		}
	}
	return n
}
