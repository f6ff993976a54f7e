package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// The in-process store reads nothing over a network, so it has nothing to
// save by starting from a state a cache kept: its Known methods run as
// their plain counterparts do (which the cache's contract allows), and
// hand back what a cache keeps.

// ClaimKnown claims nothing: the turn then runs as RunTurn runs it.
func (db *DB) ClaimKnown(context.Context, chat.TurnQuery, *chat.TurnState, func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, bool) {
	return nil, false
}

// ReadKnown reads as ReadTurn does; known is not needed.
func (db *DB) ReadKnown(ctx context.Context, q chat.TurnQuery, _ *chat.TurnState) (*chat.TurnState, error) {
	return db.ReadTurn(ctx, q)
}

// AppendKnown appends as RunAppend does, and returns the session and its
// context as left, and the user's usage.
func (db *DB) AppendKnown(ctx context.Context, q chat.AppendQuery, _ *chat.TurnState, _ chat.Version, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (*chat.TurnState, chat.Version, error) {
	v, err := db.RunAppend(ctx, q, plan)
	if err != nil {
		return nil, nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	out := &chat.TurnState{ContextVersion: v}
	if s, ok := db.sessions[q.SessionID]; ok {
		out.Session, out.Tail, out.Version = s.Clone(), db.tail(q.SessionID), v
	}
	return out, nil, nil
}

// CreateKnown creates the session as CreateSession does and returns it as
// a state with no context yet.
func (db *DB) CreateKnown(ctx context.Context, s *sessions.Session) (*chat.TurnState, error) {
	if err := db.CreateSession(ctx, s); err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	out := &chat.TurnState{Session: s.Clone(), Tail: db.tail(s.ID)}
	out.ContextVersion = contextVersion(out.Session, out.Tail)
	out.Version = out.ContextVersion
	return out, nil
}
