package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// PurgeSessions purges each session in turn.
func (db *DB) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	for i, id := range ids {
		n, err := db.PurgeSession(ctx, id, check, forget)
		out[i] = retention.Purged{SessionID: id, Documents: n, Err: err}
	}
	return out
}

func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	db.mu.Lock()
	s, ok := db.sessions[id]
	if !ok {
		db.mu.Unlock()
		return 0, sessions.NotFound(id)
	}
	if err := check(s.Clone()); err != nil {
		db.mu.Unlock()
		return 0, err
	}
	n := db.purgeLocked(id)
	db.mu.Unlock()
	if forget != nil { // outside the lock: it uses this store
		return n, forget(ctx, s.UserID, id)
	}
	return n, nil
}

// purgeLocked removes a session and all under it; db.mu is held.
func (db *DB) purgeLocked(id string) int {
	n := 1 + len(db.compact[id]) + len(db.recall[id]) + len(db.jobs[id])
	for _, m := range db.messages[id] {
		if m.ID != "" { // not trimmed
			n++
		}
	}
	if _, ok := db.tails[id]; ok {
		n++
	}
	delete(db.sessions, id)
	delete(db.messages, id)
	delete(db.keys, id)
	delete(db.replies, id)
	delete(db.drafts, id)
	delete(db.tails, id)
	delete(db.compact, id)
	delete(db.recall, id)
	delete(db.jobs, id)
	return n
}

// PendingPurges is always empty: a purge here is one atomic step.
func (db *DB) PendingPurges(context.Context, string, int) ([]string, error) { return nil, nil }

// CountPendingPurges is always 0.
func (db *DB) CountPendingPurges(context.Context) (int, error) { return 0, nil }

// ResumePurges has nothing to finish.
func (db *DB) ResumePurges(context.Context, []string, sessions.Forget) []retention.Purged { return nil }
