package recall

import (
	"context"
	"sync"
	"time"
)

// BM25 weighs a term by how many of the user's units hold it among how
// many units the user has. That number changes slowly and weighs every
// term alike, so a retrieval counts it (an aggregation: a query the
// Firestore emulator answers by going through the whole database, as
// long as a term's) only when it has not counted it lately for the same
// user, in this process: nothing is written for it, and no per-user
// document changes with every unit indexed.

// UnitCountTTL is how long a count of a user's units is used before a
// retrieval counts them again.
const UnitCountTTL = 10 * time.Minute

// maxCountedUsers bounds the counts kept; past it, they are forgotten
// all at once (each is counted again on its next retrieval).
const maxCountedUsers = 10000

// unitCounts are the counts of users' units lately made, by user.
type unitCounts struct {
	mu     sync.Mutex
	byUser map[string]unitCount
}

type unitCount struct {
	n  int
	at time.Time
}

// known is userID's count if counted less than UnitCountTTL before now.
func (c *unitCounts) known(userID string, now time.Time) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ok := c.byUser[userID]
	if !ok || now.Sub(got.at) >= UnitCountTTL || now.Before(got.at) {
		return 0, false
	}
	return got.n, true
}

// keep remembers userID's count n, made at now.
func (c *unitCounts) keep(userID string, n int, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUser == nil || len(c.byUser) >= maxCountedUsers {
		c.byUser = map[string]unitCount{}
	}
	c.byUser[userID] = unitCount{n: n, at: now}
}

// countUnits counts userID's units and remembers the count.
func (svc *Service) countUnits(ctx context.Context, userID string) (int, error) {
	at := svc.now()
	n, err := svc.Store.CountUnits(ctx, userID)
	if err == nil {
		svc.counts.keep(userID, n, at)
	}
	return n, err
}

// now is the service's clock.
func (svc *Service) now() time.Time {
	if svc.Now != nil {
		return svc.Now()
	}
	return time.Now()
}
