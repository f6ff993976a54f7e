package inprocdb

import (
	"context"
	"slices"

	"github.com/chatmemory/backend/history"
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
	db.recall[e.SessionID][e.Answer] = e
	return nil
}

// Nearest ranks every exchange of the user by brute force.
func (db *DB) Nearest(_ context.Context, userID, sessionID string, v []float32, k int) ([]recall.Hit, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var hits []recall.Hit
	for sid, byID := range db.recall {
		if sessionID != "" && sid != sessionID {
			continue
		}
		for _, e := range byID {
			if e.UserID != userID {
				continue
			}
			h := recall.Hit{Exchange: e, Distance: recall.Cosine(e.Vector, v)}
			if s, ok := db.sessions[sid]; ok {
				h.Session = s.Clone()
			}
			for _, m := range db.messages[sid] {
				switch m.ID {
				case e.QuestionID:
					h.Question = ptr(cloneMessage(m))
				case e.Answer:
					h.Reply = ptr(cloneMessage(m))
				}
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
	return hits[:min(k, len(hits))], nil
}

func ptr(m history.Message) *history.Message { return &m }
