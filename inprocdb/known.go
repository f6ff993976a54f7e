package inprocdb

import (
	"context"
	"slices"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// A cache in front of the store (package cache) keeps the states the
// store returns and starts from one instead of reading it. The in-process
// store names the version of a session and its context by their content
// (contextVersion) and a slot's by its minute, and holds a commit planned
// from a known state to them as Firestore's store holds one to update
// times: a state that is no longer current is refused whole, and the
// caller then reads and plans as it would have without it. So the cache's
// fast path runs here as it does on Firestore, without an emulator.

// ClaimKnown plans a turn's claim from known (the session, its context
// and the user's slots named by q.Slots) and commits it when they are
// still what is stored, reading beside it the day's spend, the memory
// block and the reply under the turn's key. nil when nothing of it stands;
// tried when the commit was refused.
func (db *DB) ClaimKnown(_ context.Context, q chat.TurnQuery, known *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, bool) {
	if known == nil || known.Session == nil || q.AskedID != "" || q.Deleted || q.Day == "" || len(known.Slots) != len(q.Slots) {
		return nil, false
	}
	ts := *known
	ts.Session, ts.Tail = known.Session.Clone(), cloneTail(known.Tail) // no plan changes what the cache kept
	db.mu.Lock()
	defer db.mu.Unlock()
	now := db.readTurnLocked(q)
	ts.DayTokens, ts.Memory, ts.Answer = now.DayTokens, now.Memory, now.Answer
	w, err := plan(&ts)
	if err != nil || w == nil {
		return nil, false // the read decides: what was kept may be stale
	}
	if now.Session == nil || now.ContextVersion != known.ContextVersion || !slices.Equal(now.Slots, known.Slots) ||
		(q.Key != "" && (len(db.batch(q.SessionID, q.Key)) > 0 || now.Answer != nil)) {
		return nil, true // refused: the session, its context, a slot or the key changed
	}
	out, err := db.applyTurnLocked(q, &ts, w)
	if err != nil {
		return nil, true
	}
	return out, true
}

// ReadKnown reads as ReadTurn does: reading costs nothing here, so known
// is not needed.
func (db *DB) ReadKnown(ctx context.Context, q chat.TurnQuery, _ *chat.TurnState) (*chat.TurnState, error) {
	return db.ReadTurn(ctx, q)
}

// AppendKnown appends as RunAppend does, and returns the session and its
// context as left (usage: nil, the store does not name it).
func (db *DB) AppendKnown(ctx context.Context, q chat.AppendQuery, _ *chat.TurnState, _ chat.Version, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (*chat.TurnState, chat.Version, error) {
	v, err := db.RunAppend(ctx, q, plan)
	if err != nil {
		return nil, nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	out := &chat.TurnState{ContextVersion: v}
	if s, ok := db.sessions[q.SessionID]; ok {
		out.Session, out.Tail = s.Clone(), db.tail(q.SessionID)
		versioned(out)
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
	versioned(out)
	return out, nil
}

// versioned names st's versions as the store holds its commits to them:
// the session and its context by their content, each slot by its minute.
func versioned(st *chat.TurnState) *chat.TurnState {
	if st.Session != nil {
		st.ContextVersion = contextVersion(st.Session, st.Tail)
		st.Version = st.ContextVersion
	}
	st.SlotVersions = make([]chat.Version, len(st.Slots))
	for i, m := range st.Slots {
		st.SlotVersions[i] = m
	}
	return st
}
