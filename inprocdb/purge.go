package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	p := db.PurgeSessions(ctx, []string{id}, check, forget)[0]
	return p.Documents, p.Err
}

// PurgeSessions purges each session in turn, then calls forget once for
// each user of those purged, with their sessions (as the Firestore
// store's purges do).
func (db *DB) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	var users []string
	of := map[string][]int{} // user → indexes into out
	for i, id := range ids {
		user, n, err := db.purge(id, check)
		out[i] = retention.Purged{SessionID: id, Documents: n, Err: err}
		if err == nil {
			if _, ok := of[user]; !ok {
				users = append(users, user)
			}
			of[user] = append(of[user], i)
		}
	}
	for _, user := range users {
		if forget == nil {
			break
		}
		var gone []string
		for _, i := range of[user] {
			gone = append(gone, ids[i])
		}
		err := forget(ctx, user, gone) // outside the lock: it uses this store
		for _, i := range of[user] {
			out[i].Err = err
		}
	}
	return out
}

// purge removes session id and all under it if check accepts it, and
// returns its owner and how many documents went.
func (db *DB) purge(id string, check func(*sessions.Session) error) (string, int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[id]
	if !ok {
		return "", 0, sessions.NotFound(id)
	}
	if err := check(s.Clone()); err != nil {
		return "", 0, err
	}
	units := len(db.recall[id]) // not counted, as the Firestore store's purges do not count them
	return s.UserID, db.purgeLocked(id) - units, nil
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
