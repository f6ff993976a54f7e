package inprocdb

import (
	"context"
	"sort"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

func (db *DB) ReadTail(_ context.Context, sessionID string) (*sessions.Session, *history.Tail, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return nil, nil, sessions.NotFound(sessionID)
	}
	return s.Clone(), db.tail(sessionID), nil
}

func (db *DB) UpdateTail(_ context.Context, sessionID string, fn func(*sessions.Session, *history.Tail) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return sessions.NotFound(sessionID)
	}
	sc, t := s.Clone(), db.tail(sessionID)
	if err := fn(sc, t); err != nil {
		return err
	}
	db.sessions[sessionID] = sc
	db.tails[sessionID] = t
	return nil
}

func (db *DB) SaveCompaction(_ context.Context, sessionID string, c *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return sessions.NotFound(sessionID)
	}
	for _, old := range db.compact[sessionID] {
		if old.ID == c.ID {
			return errs.Errorf(errs.ECONFLICT, "compaction %s exists", c.ID)
		}
	}
	sc, t := s.Clone(), db.tail(sessionID)
	if err := fn(sc, t); err != nil {
		return err
	}
	db.compact[sessionID] = append(db.compact[sessionID], *c)
	db.sessions[sessionID] = sc
	db.tails[sessionID] = t
	return nil
}

// tail returns a copy of a session's tail (empty if none); db.mu is held.
func (db *DB) tail(sessionID string) *history.Tail {
	if t, ok := db.tails[sessionID]; ok {
		return cloneTail(t)
	}
	return &history.Tail{}
}

func cloneTail(t *history.Tail) *history.Tail {
	c := *t
	c.Messages = make([]history.Message, len(t.Messages))
	for i, m := range t.Messages {
		c.Messages[i] = cloneMessage(m)
	}
	if t.Compaction != nil {
		cp := *t.Compaction
		c.Compaction = &cp
	}
	return &c
}

func (db *DB) ListCompactions(_ context.Context, sessionID string) ([]history.Compaction, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := append([]history.Compaction(nil), db.compact[sessionID]...)
	sort.Slice(out, func(i, j int) bool { return out[i].EndSeq < out[j].EndSeq })
	return out, nil
}
