package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// UpdateFeedback changes a message's feedback and its session's counts
// under the lock.
func (db *DB) UpdateFeedback(_ context.Context, sessionID, messageID string, fn func(*sessions.Session, *history.Message) (bool, error)) (*history.Message, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	stored, ok := db.sessions[sessionID]
	if !ok {
		return nil, sessions.NotFound(sessionID)
	}
	s, at := stored.Clone(), -1
	var m *history.Message
	for i := range db.messages[sessionID] {
		if db.messages[sessionID][i].ID == messageID {
			c := cloneMessage(db.messages[sessionID][i])
			m, at = &c, i
			break
		}
	}
	changed, err := fn(s, m)
	if err != nil {
		return nil, err
	}
	if changed {
		db.sessions[sessionID] = s
		db.messages[sessionID][at] = cloneMessage(*m)
	}
	return m, nil
}
