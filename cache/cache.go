// Package cache keeps, per instance, what a store last read or wrote of
// recent sessions and of their users' rate-limit slots, spend and memory,
// and starts a store's work from it instead of reading it again: a turn's
// claim, a read of a context, an append given the version an app read the
// context at. It wraps any store that can start from a known state
// (Source) and is itself a store: the same contract suite runs on it.
//
// Nothing kept is trusted. The store conditions every commit planned from
// a known state on the versions it names, so a state that is no longer
// current (another instance wrote since) costs a refused commit or a
// second read, never a wrong answer; and every write that goes through
// the cache drops what it kept of what that write changes.
package cache

import (
	"container/list"
	"context"
	"sync"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storage"
)

// Source is the store the cache wraps: any store. What it offers of
// Known, the cache discovers and uses; without it, the cache keeps
// nothing and every call goes through as the store runs it.
type Source = storage.Store

// Known is what a store offers to start from a known state (one it
// returned earlier, which may no longer be current) for each operation
// the cache speeds up. A store may ignore what it is given and read.
type Known interface {
	// ClaimKnown may plan a turn's claim from known (the session and its
	// context, the user's slots named by q.Slots with their SlotVersions,
	// DayTokens the least the day's spend can be, and the memory block)
	// and commit it at once, on condition that none of that changed,
	// reading beside that commit the day's spend, the memory block and the
	// reply under q.Key; the state it returns holds what it read beside.
	// It returns nil when nothing of it stands (tried: after a commit was
	// refused), and then the turn runs as RunTurn runs it.
	ClaimKnown(ctx context.Context, q chat.TurnQuery, known *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, bool)
	// ReadKnown reads as ReadTurn does, but may take the session's
	// context from known when the session proves unchanged.
	ReadKnown(ctx context.Context, q chat.TurnQuery, known *chat.TurnState) (*chat.TurnState, error)
	// AppendKnown runs an append as RunAppend does, but may plan from
	// known (at version q.IfMatch) and usage (what an earlier AppendKnown
	// returned of the user's quota and spend on q.Day) instead of reading
	// them. It returns the session and its context as the commit left
	// them (as read, with a nil write), and the user's quota and spend;
	// the state's Version, and usage, are nil when the store cannot tell.
	AppendKnown(ctx context.Context, q chat.AppendQuery, known *chat.TurnState, usage chat.Version, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (*chat.TurnState, chat.Version, error)
	// CreateKnown creates a session as CreateSession does and returns it
	// as a known state with no context yet.
	CreateKnown(ctx context.Context, s *sessions.Session) (*chat.TurnState, error)
}

// Store is a Source with what this instance kept in front of it.
type Store struct {
	Source       // every method the cache does not change goes straight through
	known  Known // the Source's own, or plain

	mu    sync.Mutex
	max   int
	bytes int
	order *list.List               // of *session, newest first
	by    map[string]*list.Element // session id →
	users map[string]*user         // user id →
	stale float64                  // the recent share of kept sessions found written elsewhere (see fence.go)
	hints map[string]chat.Hint     // session id → what its last turn here embedded (hints.go)
}

// session is what the cache kept of a session and its context.
type session struct {
	st   *chat.TurnState // Session, Tail, ContextVersion and the store's Version only
	size int
}

// DefaultBytes bounds what an instance keeps of recent contexts.
const DefaultBytes = 16 << 20

// maxUsers bounds how many users' slots, spend and memory an instance
// keeps.
const maxUsers = 4096

// New wraps src, keeping up to maxBytes of recent contexts (0: nothing,
// every call goes straight through).
func New(src Source, maxBytes int) *Store {
	known, ok := src.(Known)
	if !ok {
		known, maxBytes = plain{src}, 0 // nothing it returns names a version: nothing is kept
	}
	return &Store{Source: src, known: known, max: maxBytes, order: list.New(), by: map[string]*list.Element{}, users: map[string]*user{}}
}

// put keeps st, a state the store returned, in place of what was kept of
// its session; a state the store could not name a version of drops it.
func (c *Store) put(sessionID string, st *chat.TurnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(sessionID, st)
}

// putUnlessKept keeps st unless something was kept of its session since
// the caller dropped it (from a turn's commit, newer than st may be).
func (c *Store) putUnlessKept(sessionID string, st *chat.TurnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, kept := c.by[sessionID]; !kept {
		c.putLocked(sessionID, st)
	}
}

func (c *Store) putLocked(sessionID string, st *chat.TurnState) {
	c.dropLocked(sessionID)
	if c.max <= 0 || st == nil || st.Version == nil || st.Session == nil {
		return
	}
	kept := &chat.TurnState{Session: st.Session.Clone(), Tail: st.Tail.Clone(), ContextVersion: st.ContextVersion, Version: st.Version}
	s := &session{st: kept, size: sizeOf(kept)}
	if s.size > c.max {
		return
	}
	c.by[sessionID] = c.order.PushFront(s)
	c.bytes += s.size
	for c.bytes > c.max {
		back := c.order.Back().Value.(*session)
		c.dropLocked(back.st.Session.ID)
	}
}

// sizeOf estimates what keeping st costs.
func sizeOf(st *chat.TurnState) int {
	n := 1024
	if st.Tail != nil {
		for _, m := range st.Tail.Messages {
			n += len(m.Content) + 64
		}
	}
	return n
}

// at returns what is kept of the session if it is at version v.
func (c *Store) at(sessionID, v string) *chat.TurnState {
	if v == "" {
		return nil
	}
	if st := c.latest(sessionID); st != nil && st.ContextVersion == v {
		return st
	}
	return nil
}

// latest returns a copy of what is kept of the session, if anything.
func (c *Store) latest(sessionID string) *chat.TurnState {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.by[sessionID]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	st := *e.Value.(*session).st
	st.Session, st.Tail = st.Session.Clone(), st.Tail.Clone()
	return &st
}

// drop forgets what was kept of each session.
func (c *Store) drop(sessionIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range sessionIDs {
		c.dropLocked(id)
	}
}

func (c *Store) dropLocked(sessionID string) {
	if e, ok := c.by[sessionID]; ok {
		c.bytes -= e.Value.(*session).size
		c.order.Remove(e)
		delete(c.by, sessionID)
	}
}
