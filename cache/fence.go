package cache

// fenceStale is how much of the recent reads that found their session
// kept may find it stale before ReadTurn stops asking the store to start
// from what was kept (a stale one costs the store a second round trip).
const fenceStale = 0.1

// fenceWorth reports whether the contexts this instance kept have proven
// current often enough to start reads from them.
func (c *Store) fenceWorth() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stale < fenceStale
}

// noteFence counts a read that found its session kept: current, or
// written elsewhere since. The share of stale ones decays over about the
// last 20 such reads.
func (c *Store) noteFence(current bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x := 1.0
	if current {
		x = 0
	}
	c.stale = 0.95*c.stale + 0.05*x
}
