package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// turnVersion is what a chat.TurnState was read (or written) as: the
// update times its commit is conditioned on.
type turnVersion struct {
	st        *stored
	askedTime time.Time   // of the user message stored under the key; zero if none
	slotTimes []time.Time // of each slot document; zero if none
}

// RunTurn reads everything a turn needs in one BatchGetDocuments (the
// session, its context, the key's message and reply, the user's turn slots,
// today's spend and the memory block) and commits the turn's write in one
// Commit, conditioned on the update times read; see chat.TurnStore.
func (db *DB) RunTurn(ctx context.Context, q chat.TurnQuery, prev *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, error) {
	var unchanged *chat.TurnState
	var written func([]*firestore.WriteResult) *chat.TurnState
	res, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		st := prev
		prev = nil // a retry reads afresh
		if _, ok := stateVersion(st); !ok {
			var err error
			if st, err = db.readTurn(get, q); err != nil {
				return nil, err
			}
		}
		w, err := plan(st)
		if err != nil || w == nil {
			unchanged, written = st, nil
			return nil, err
		}
		var b *writes
		b, written, err = db.writeTurn(q, st, w)
		if err != nil {
			return nil, err
		}
		return b, nil
	})
	switch {
	case err != nil:
		return nil, err
	case written == nil:
		return unchanged, nil
	}
	return written(res), nil
}

func stateVersion(st *chat.TurnState) (*turnVersion, bool) {
	if st == nil {
		return nil, false
	}
	v, ok := st.Version.(*turnVersion)
	return v, ok
}

// turnRefs are the documents a turn reads, after its context's.
type turnRefs struct {
	asked, answer, day, memory *firestore.DocumentRef
	slots                      []*firestore.DocumentRef
}

func (db *DB) turnRefs(q chat.TurnQuery) (turnRefs, []*firestore.DocumentRef) {
	msgs := db.messagesOf(q.SessionID)
	r := turnRefs{day: db.dayRef(q.UserID, q.Day), memory: db.memoryRef(q.UserID)}
	list := []*firestore.DocumentRef{r.day, r.memory}
	if q.Key != "" {
		r.asked, r.answer = msgs.Doc(history.KeyDocID(q.Key, 0)), msgs.Doc(history.ReplyDocID(q.Key))
		list = append(list, r.asked, r.answer)
	}
	for i := range min(q.Slots, chat.MaxTurnsPerMinute) {
		r.slots = append(r.slots, db.slotRef(q.UserID, i))
	}
	return r, append(list, r.slots...)
}

// readTurn reads what q names in one round trip.
func (db *DB) readTurn(get getAll, q chat.TurnQuery) (*chat.TurnState, error) {
	r, refs := db.turnRefs(q)
	st, snaps, err := db.readStored(get, q.SessionID, refs...)
	if err != nil {
		return nil, err
	}
	v := &turnVersion{st: st, slotTimes: make([]time.Time, len(r.slots))}
	ts := &chat.TurnState{Tail: st.t, Version: v, Slots: make([]int64, len(r.slots))}
	if st.exists {
		ts.Session = st.s
	}
	var day dayDoc
	if err := dataTo(snaps[0], &day); err != nil {
		return nil, err
	}
	ts.DayTokens = day.Tokens
	if q.Memory && snaps[1].Exists() {
		u, err := decodeMemoryUser(snaps[1], q.UserID)
		if err != nil {
			return nil, err
		}
		if !u.Disabled {
			ts.Memory = chat.MemoryBlock{Text: u.Block, Tokens: u.BlockTokens}
		}
	}
	rest := snaps[2:]
	if q.Key != "" {
		if rest[0].Exists() {
			m, _, err := decodeMessage(rest[0])
			if err != nil {
				return nil, err
			}
			ts.Asked, v.askedTime = &m, rest[0].UpdateTime
		}
		if rest[1].Exists() {
			m, _, err := decodeMessage(rest[1])
			if err != nil {
				return nil, err
			}
			ts.Answer = &m
		}
		rest = rest[2:]
	}
	for i, snap := range rest {
		var d slotDoc
		if err := dataTo(snap, &d); err != nil {
			return nil, err
		}
		if snap.Exists() {
			ts.Slots[i], v.slotTimes[i] = d.Minute, snap.UpdateTime
		}
	}
	return ts, nil
}

// writeTurn plans the commit of w over ts, every write conditioned on what
// ts was read as, and returns with it how to tell the state it leaves.
func (db *DB) writeTurn(q chat.TurnQuery, ts *chat.TurnState, w *chat.TurnWrite) (*writes, func([]*firestore.WriteResult) *chat.TurnState, error) {
	v, _ := stateVersion(ts)
	r, _ := db.turnRefs(q)
	b := db.newWrites()
	sref := db.sessionRef(q.SessionID)
	if w.Session != nil {
		writeSession(b, sref, v.st, w.Session)
	}
	s := w.Session
	if s == nil {
		s = ts.Session
	}
	var l *pagePlan
	if w.Tail != nil {
		var err error
		if l, err = db.writeContext(b, v.st, s, w.Tail); err != nil {
			return nil, nil, err
		}
	}
	coll := db.messagesOf(q.SessionID)
	for i := range w.Messages {
		m := &w.Messages[i]
		batch := 0
		if m.ClientMessageID != "" {
			batch = 1 // a turn's message is a batch of one
		}
		b.Create(coll.Doc(m.ID), toMessageDoc(m, batch))
	}
	if w.Lease != nil && ts.Asked != nil {
		var lease any = firestore.Delete
		if !w.Lease.IsZero() {
			lease = *w.Lease
		}
		b.Update(r.asked, []firestore.Update{{Path: "replyBy", Value: lease}}, firestore.LastUpdateTime(v.askedTime))
	}
	if w.Slot >= 0 {
		if w.Slot >= len(r.slots) {
			return nil, nil, sessions.Errorf(sessions.EINTERNAL, "turn slot %d of %d", w.Slot, len(r.slots))
		}
		d := slotDoc{UserID: q.UserID, Minute: w.Minute}
		if t := v.slotTimes[w.Slot]; t.IsZero() {
			b.Create(r.slots[w.Slot], d)
		} else {
			b.Update(r.slots[w.Slot], fieldUpdates(d), firestore.LastUpdateTime(t))
		}
	}
	if w.Tokens > 0 {
		db.addTokens(b, q.UserID, q.Day, w.Tokens)
	}
	return b, func(res []*firestore.WriteResult) *chat.TurnState {
		nv := &turnVersion{st: v.st.after(b, res, sref, db.contextOf(q.SessionID).Doc(headDocID), w.Session, w.Tail, l),
			askedTime: v.askedTime, slotTimes: append([]time.Time(nil), v.slotTimes...)}
		out := *ts
		out.Version = nv
		out.Session, out.Tail = nv.st.s, nv.st.t
		out.Slots = append([]int64(nil), ts.Slots...)
		out.DayTokens += w.Tokens
		for i := range w.Messages {
			m := w.Messages[i]
			switch {
			case q.Key != "" && m.ID == r.asked.ID:
				out.Asked = &m
				nv.askedTime, _ = b.time(res, r.asked)
			case q.Key != "" && m.ID == r.answer.ID:
				out.Answer = &m
			}
		}
		if w.Lease != nil && out.Asked != nil {
			asked := *out.Asked
			asked.ReplyBy = *w.Lease
			out.Asked = &asked
			nv.askedTime, _ = b.time(res, r.asked)
		}
		if w.Slot >= 0 {
			out.Slots[w.Slot] = w.Minute
			nv.slotTimes[w.Slot], _ = b.time(res, r.slots[w.Slot])
		}
		if res == nil { // committed in a transaction, which reports no update times
			out.Version = nil // so a RunTurn given this state reads afresh
		}
		return &out
	}, nil
}
