package inprocdb

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// CountExpired counts what ExpiredSessions would list.
func (db *DB) CountExpired(ctx context.Context, st sessions.Status, now time.Time) (int, error) {
	all, err := db.ExpiredSessions(ctx, st, now, nil, math.MaxInt)
	return len(all), err
}

func (db *DB) ExpiredSessions(_ context.Context, st sessions.Status, now time.Time, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for _, s := range db.sessions {
		if s.Status != st || s.ExpiresAt.After(now) {
			continue
		}
		if after != nil && (s.ExpiresAt.Before(after.ExpiresAt) || (s.ExpiresAt.Equal(after.ExpiresAt) && s.ID <= after.ID)) {
			continue
		}
		out = append(out, s.Clone())
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ExpiresAt.Equal(out[j].ExpiresAt) {
			return out[i].ExpiresAt.Before(out[j].ExpiresAt)
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// LastBacklog returns what SaveBacklog recorded.
func (db *DB) LastBacklog(context.Context) (int, time.Time, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.backlog.n, db.backlog.at, db.backlog.ok, nil
}

// SaveBacklog records a sweep's backlog.
func (db *DB) SaveBacklog(_ context.Context, n int, at time.Time) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.backlog.n, db.backlog.at, db.backlog.ok = n, at, true
	return nil
}

// DeleteUserDocuments deletes whatever still belongs to userID.
func (db *DB) DeleteUserDocuments(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := 0
	for id, s := range db.sessions {
		if s.UserID == userID {
			n += db.purgeLocked(id)
		}
	}
	if _, ok := db.accounts[userID]; ok {
		delete(db.accounts, userID)
		n++
	}
	return n + db.deleteUsageLocked(userID) + db.eraseMemoryLocked(userID), nil
}
