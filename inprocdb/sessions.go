package inprocdb

import (
	"context"
	"sort"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

func (db *DB) CreateSession(_ context.Context, s *sessions.Session) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.sessions[s.ID]; ok {
		return errs.Errorf(errs.ECONFLICT, "session %q already exists", s.ID)
	}
	db.sessions[s.ID] = s.Clone()
	db.accounts[s.UserID] = s.CreatedAt
	return nil
}

func (db *DB) GetSession(_ context.Context, id string) (*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[id]
	if !ok {
		return nil, sessions.NotFound(id)
	}
	return s.Clone(), nil
}

func (db *DB) UpdateSession(_ context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[id]
	if !ok {
		return nil, sessions.NotFound(id)
	}
	c := s.Clone()
	if err := fn(c); err != nil {
		return nil, err
	}
	db.sessions[id] = c
	if c.Title != s.Title {
		db.retitle(id, c.Title)
	}
	return c.Clone(), nil
}

// UpdateSessions changes sessions of one user, each as UpdateSession does.
func (db *DB) UpdateSessions(_ context.Context, userID string, ids []string, fn func(*sessions.Session) error) ([]error, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make([]error, len(ids))
	for i, id := range ids {
		s, ok := db.sessions[id]
		if !ok || s.UserID != userID {
			out[i] = sessions.NotFound(id)
			continue
		}
		c := s.Clone()
		if out[i] = fn(c); out[i] == nil {
			db.sessions[id] = c
			if c.Title != s.Title {
				db.retitle(id, c.Title)
			}
		}
	}
	return out, nil
}

func (db *DB) ListSessions(_ context.Context, q sessions.ListQuery) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for _, s := range db.sessions {
		if s.UserID == q.UserID && s.Status == q.Status && (q.After == nil || before(s, q.After)) {
			out = append(out, s.Clone())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return before(out[j], &sessions.Cursor{UpdatedAt: out[i].UpdatedAt, ID: out[i].ID})
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// before reports whether s comes after cursor c in the list order
// (UpdatedAt descending, then ID descending).
func before(s *sessions.Session, c *sessions.Cursor) bool {
	if !s.UpdatedAt.Equal(c.UpdatedAt) {
		return s.UpdatedAt.Before(c.UpdatedAt)
	}
	return s.ID < c.ID
}
