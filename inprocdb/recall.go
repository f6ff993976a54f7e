package inprocdb

import (
	"context"
	"slices"
	"strings"

	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// SaveExchange stores e if its session is there and not deleted.
func (db *DB) SaveExchange(_ context.Context, e recall.Exchange) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[e.SessionID]
	if !ok || s.UserID != e.UserID || s.Status == sessions.StatusDeleted {
		return sessions.NotFound(e.SessionID)
	}
	if db.recall[e.SessionID] == nil {
		db.recall[e.SessionID] = map[string]recall.Exchange{}
	}
	e.Vector = slices.Clone(e.Vector)
	e.SessionTitle = s.Title
	db.recall[e.SessionID][e.Reply.ID] = e
	return nil
}

// Nearest ranks every exchange of the user by brute force.
func (db *DB) Nearest(_ context.Context, q recall.Query) ([]recall.Hit, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var hits []recall.Hit
	for sid, byID := range db.recall {
		if q.SessionID != "" && sid != q.SessionID {
			continue
		}
		for _, e := range byID {
			if e.UserID != q.UserID {
				continue
			}
			h := recall.Hit{Exchange: e, Distance: recall.Cosine(e.Vector, q.Vector)}
			if s, ok := db.sessions[sid]; ok && q.Sessions {
				h.Session = s.Clone()
			}
			h.Exchange.Vector = nil
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b recall.Hit) int {
		switch {
		case a.Distance < b.Distance:
			return -1
		case a.Distance > b.Distance:
			return 1
		}
		return 0
	})
	return hits[:min(q.K, len(hits))], nil
}

// SessionsAfter pages every user's sessions by id.
func (db *DB) SessionsAfter(_ context.Context, after string, limit int) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for id, s := range db.sessions {
		if id > after {
			out = append(out, s.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *sessions.Session) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(limit, len(out))], nil
}

// Embedded returns the models of a session's stored exchanges.
func (db *DB) Embedded(_ context.Context, sessionID string) (map[string]string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := map[string]string{}
	for id, e := range db.recall[sessionID] {
		out[id] = e.Model
	}
	return out, nil
}

// CountExchanges counts userID's stored exchanges.
func (db *DB) CountExchanges(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := 0
	for _, byID := range db.recall {
		for _, e := range byID {
			if e.UserID == userID {
				n++
			}
		}
	}
	return n, nil
}
