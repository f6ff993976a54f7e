// Package rpcs counts the storage round trips made under a context: a run
// that reports its own (the retention sweep, phase by phase) puts a
// Counter in its context, and the store's client, dialled with an
// interceptor that calls Add, counts every RPC made under it.
package rpcs

import (
	"context"
	"sync/atomic"
)

// Counter counts RPCs.
type Counter struct{ n atomic.Int64 }

type key struct{}

// With returns ctx with a new Counter, and the Counter.
func With(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{}
	return context.WithValue(ctx, key{}, c), c
}

// Add counts one RPC made under ctx, if it has a Counter.
func Add(ctx context.Context) {
	if c := Of(ctx); c != nil {
		c.n.Add(1)
	}
}

// Of is ctx's Counter (nil if it has none).
func Of(ctx context.Context) *Counter {
	c, _ := ctx.Value(key{}).(*Counter)
	return c
}

// Load is how many RPCs c counted (0 for nil).
func (c *Counter) Load() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}
