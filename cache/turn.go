package cache

import (
	"context"
	"maps"
	"slices"

	"github.com/chatmemory/backend/chat"
)

// RunTurn runs a turn through the store. A plain turn (not given a state,
// not answering a stored message, not recalling from every session) of a
// session kept here, by a user whose slots, spend and memory are known
// here, is claimed from what is kept (the store's ClaimKnown); any other
// runs as the store runs it. Either way the cache keeps what it returns:
// the state committed, or the one read for a turn its plan refused (a
// limit, a busy session), so that the next turn here need not read.
func (c *Store) RunTurn(ctx context.Context, q chat.TurnQuery, prev *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, error) {
	var last *chat.TurnWrite
	watched := watch(plan, &last)
	if kq, known, done, ok := c.knownTurn(q, prev); ok {
		out, tried := c.known.ClaimKnown(ctx, kq, known, watched)
		done()
		if out != nil {
			c.learnTurn(kq, out, last)
			return out, nil
		}
		if tried { // refused: what was kept is stale, and the read keeps it anew
			c.drop(q.SessionID)
		}
	}
	out, err := c.Source.RunTurn(ctx, q, prev, watched)
	learned := q
	if prev != nil {
		learned.Slots = nil // the state's slots are prev's, which may be another query's
	}
	c.learnTurn(learned, out, last)
	return out, err
}

// knownTurn is the query and state a turn's claim may plan from without
// reading: the session as this instance last read or wrote it, and every
// slot of the user's it knows (the query's slots are replaced by them);
// false if the cache lacks any of that, or the turn is not a plain one.
// The caller calls done once its claim is over.
func (c *Store) knownTurn(q chat.TurnQuery, prev *chat.TurnState) (_ chat.TurnQuery, _ *chat.TurnState, done func(), _ bool) {
	if prev != nil || q.AskedID != "" || q.Deleted || q.Day == "" { // (a session kept exists: New changes nothing)
		return q, nil, nil, false
	}
	st := c.latest(q.SessionID)
	if st == nil {
		return q, nil, nil, false
	}
	u, done, ok := c.claimFor(q.UserID)
	if !ok {
		return q, nil, nil, false
	}
	if u.day != q.Day || (q.Memory && u.memory.Source == nil) || (len(q.Slots) > 0 && len(u.slots) == 0) {
		done()
		return q, nil, nil, false
	}
	if len(q.Slots) > 0 {
		q.Slots = slices.Sorted(maps.Keys(u.slots))
	}
	st.DayTokens, st.Memory = u.dayFloor, u.memory
	st.Slots, st.SlotVersions = make([]int64, len(q.Slots)), make([]chat.Version, len(q.Slots))
	for i, idx := range q.Slots {
		st.Slots[i], st.SlotVersions[i] = u.slots[idx].minute, u.slots[idx].version
	}
	return q, st, done, true
}

// ReadTurn reads what q names; of a session kept here, while kept
// sessions have proven current (see fenceWorth), through the store's
// ReadKnown, which may read less.
func (c *Store) ReadTurn(ctx context.Context, q chat.TurnQuery) (*chat.TurnState, error) {
	k := c.latest(q.SessionID)
	var out *chat.TurnState
	var err error
	if k != nil && c.fenceWorth() {
		out, err = c.known.ReadKnown(ctx, q, k)
	} else {
		out, err = c.Source.ReadTurn(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	if k != nil {
		c.noteFence(out.ContextVersion == k.ContextVersion)
	}
	c.learnTurn(q, out, nil)
	return out, nil
}

// learnTurn keeps what a turn's run returned: the session and its
// context, the slots it read or took, the day's spend and the memory
// block; last is the write its plan returned last (nil: none).
func (c *Store) learnTurn(q chat.TurnQuery, out *chat.TurnState, last *chat.TurnWrite) {
	if last != nil && last.Tokens > 0 {
		c.dropUsage(q.UserID) // the spend is no longer as kept
	}
	if out == nil {
		return
	}
	c.put(q.SessionID, out)
	c.note(q.UserID, func(u *user) {
		if len(q.Slots) > 0 && len(out.SlotVersions) == len(q.Slots) {
			for i, idx := range q.Slots {
				u.slots[idx] = slot{minute: out.Slots[i], version: out.SlotVersions[i]}
			}
		}
		if q.Day != "" {
			u.day, u.dayFloor = q.Day, out.DayTokens
		}
		if q.Memory {
			u.memory = out.Memory
		}
	})
}

// watch is plan, recording in *last the write it returned last (plans
// may run more than once): what the cache learns of a commit it did not
// plan.
func watch[S, W any](plan func(S) (W, error), last *W) func(S) (W, error) {
	return func(st S) (W, error) {
		w, err := plan(st)
		*last = w
		return w, err
	}
}
