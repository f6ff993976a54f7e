package firestoredb

import (
	"container/list"
	"fmt"
	"sync"
)

// version names a session and its context as stored: the update times of
// the session and window documents (every write of either changes its
// own). "" if there is no session.
func (st *stored) version() string {
	if !st.exists {
		return ""
	}
	var w int64
	if !st.windowTime.IsZero() {
		w = st.windowTime.UnixNano()
	}
	return fmt.Sprintf("%x.%x", st.sessionTime.UnixNano(), w)
}

// kept holds the sessions and contexts this instance last read or wrote,
// newest first, up to a number of bytes: an append given the version an
// app read the context at (GET …/context, then POST …/messages with its
// ifMatch) starts from it instead of reading the session and its window
// again. It holds too what the instance last read or wrote of each
// user's appended-messages window and spend, so that such an append,
// when the user's last append ran here, reads nothing at all. Nothing in
// it is trusted: a commit planned from it is conditioned on the update
// times it names, and a kept state that is no longer current fails that
// commit, after which the append reads.
type kept struct {
	mu    sync.Mutex
	max   int
	bytes int
	order *list.List               // of *keptState, newest first
	by    map[string]*list.Element // session id →
	usage map[string]usageRead     // user id → their window and spend, as last read or written
	turns map[string]*turnUser     // user id → their turn documents (see keptturn.go)
	stale float64                  // the recent share of kept sessions found written elsewhere (see fence.go)
}

type keptState struct {
	st   *stored
	size int
}

// DefaultKeptBytes bounds what an instance keeps of recent contexts.
const DefaultKeptBytes = 16 << 20

// KeptBytes bounds what the DB keeps of recent contexts (0: nothing).
func KeptBytes(n int) Option { return func(db *DB) { db.kept = newKept(n) } }

func newKept(max int) *kept {
	return &kept{max: max, order: list.New(), by: map[string]*list.Element{}, usage: map[string]usageRead{}, turns: map[string]*turnUser{}}
}

func storedSize(st *stored) int {
	n := 1024
	if st.window != nil {
		for _, e := range st.window.Messages {
			n += len(e) + 16
		}
	}
	return n
}

// put keeps st (which no one changes after), in place of what was kept
// of its session.
func (k *kept) put(st *stored) {
	if k == nil || k.max <= 0 || !st.exists || st.legacy != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dropLocked(st.sessionID)
	ks := &keptState{st: st.clone(), size: storedSize(st)}
	if ks.size > k.max {
		return
	}
	k.by[st.sessionID] = k.order.PushFront(ks)
	k.bytes += ks.size
	for k.bytes > k.max {
		k.dropLocked(k.order.Back().Value.(*keptState).st.sessionID)
	}
}

// get returns what is kept of the session at version v, if anything.
func (k *kept) get(sessionID, v string) *stored {
	if v == "" {
		return nil
	}
	return k.find(sessionID, v)
}

// latest returns what is kept of the session, at whatever version.
func (k *kept) latest(sessionID string) *stored { return k.find(sessionID, "") }

// find returns a copy of what is kept of the session, at version v ("":
// any), if anything.
func (k *kept) find(sessionID, v string) *stored {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.by[sessionID]
	if !ok {
		return nil
	}
	st := e.Value.(*keptState).st
	if v != "" && st.version() != v {
		return nil
	}
	k.order.MoveToFront(e)
	return st.clone()
}

// clone is st with its session and tail copied, so that no plan given
// one changes the other.
func (st *stored) clone() *stored {
	cp := *st
	cp.s, cp.t = st.s.Clone(), st.t.Clone()
	return &cp
}

func (k *kept) drop(sessionID string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dropLocked(sessionID)
}

func (k *kept) dropLocked(sessionID string) {
	if e, ok := k.by[sessionID]; ok {
		k.bytes -= e.Value.(*keptState).size
		k.order.Remove(e)
		delete(k.by, sessionID)
	}
}

// keptUsers bounds how many users' windows, spend and turn documents an
// instance keeps.
const keptUsers = 4096

// putUsage keeps what a user's window and spend are, as read or written.
func (k *kept) putUsage(userID string, ur usageRead) {
	if k == nil || k.max <= 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	roomFor(k.usage, userID, keptUsers)
	k.usage[userID] = ur
}

// roomFor makes room in m for key: when m holds max entries and none for
// key, it drops any one (the map's order is random).
func roomFor[V any](m map[string]V, key string, max int) {
	if _, ok := m[key]; ok || len(m) < max {
		return
	}
	for id := range m {
		delete(m, id)
		return
	}
}

// usageOn returns what is kept of the user's window and their spend on
// day, if anything.
func (k *kept) usageOn(userID, day string) (usageRead, bool) {
	if k == nil {
		return usageRead{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	ur, ok := k.usage[userID]
	return ur, ok && ur.day == day
}

func (k *kept) dropUsage(userID string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.usage, userID)
}
