package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// turnVersion is what a chat.TurnState was read (or written) as: the
// session and its context with the update times a commit is conditioned
// on (each slot's is among the state's SlotVersions).
type turnVersion struct {
	st *stored
}

// RunTurn reads everything a turn needs in one BatchGetDocuments (the
// session, its context, the key's message and reply, the user's turn slots,
// today's spend and the memory block) and commits the turn's write in one
// Commit, conditioned on the update times read; see chat.TurnStore.
//
// A turn that is not given a state and does not answer a stored message
// is first planned from a read that leaves the message under its key out
// (and an unkeyed turn's reply, a new id): the commit that claims the
// turn creates that message, so it lands only if there was none. A plan
// that refuses, or writes nothing, on such a read is given a read with
// them: the refusal may be a replay.
func (db *DB) RunTurn(ctx context.Context, q chat.TurnQuery, prev *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, error) {
	leaveKeyOut := prev == nil && q.AskedID == ""
	out, keyLeftOut, err := db.runTurn(ctx, q, prev, plan, leaveKeyOut)
	if keyLeftOut && q.Key != "" {
		out, _, err = db.runTurn(ctx, q, nil, plan, false)
	}
	return out, err
}

// runTurn reads (unless given prev), plans and commits, until the commit
// lands or plan writes nothing or refuses (then with the state it was
// given). With leaveKeyOut its first read leaves the message under the
// key out; keyLeftOut reports that plan refused, or wrote nothing, on
// such a read.
func (db *DB) runTurn(ctx context.Context, q chat.TurnQuery, prev *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error), leaveKeyOut bool) (_ *chat.TurnState, keyLeftOut bool, _ error) {
	var unchanged *chat.TurnState
	var written func([]*firestore.WriteResult) *chat.TurnState
	res, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		st := prev
		prev = nil // a retry reads afresh
		keyLeftOut = false
		if _, ok := stateVersion(st); !ok {
			var err error
			if st, keyLeftOut, err = db.readTurn(get, q, leaveKeyOut); err != nil {
				return nil, err
			}
		}
		leaveKeyOut = false
		w, err := plan(st)
		if err != nil || w == nil {
			unchanged, written = st, nil
			return nil, err
		}
		keyLeftOut = false
		var b *writes
		b, written, err = db.writeTurn(q, st, w)
		if err != nil {
			return nil, err
		}
		return b, nil
	})
	switch {
	case err != nil:
		return unchanged, keyLeftOut, err // the state plan refused, if it did
	case written == nil:
		return unchanged, keyLeftOut, nil
	}
	return written(res), false, nil
}

// readTurn reads what q names in one round trip; with leaveKeyOut, all
// but the message under its key (and an unkeyed turn's reply, a new id),
// and it then reports that it left them out.
func (db *DB) readTurn(get getAll, q chat.TurnQuery, leaveKeyOut bool) (_ *chat.TurnState, keyLeftOut bool, _ error) {
	if leaveKeyOut {
		if q.Key == "" {
			q.ReplyID = "" // a new id: nothing is there yet
		}
		q.Key = "" // the claim's Create of the key's message checks it
	}
	ts, err := db.readTurnState(get, q, db.readStored)
	return ts, leaveKeyOut, err
}

// writeTurn plans the commit of w over ts, every write conditioned on what
// ts was read as, and returns with it how to tell the state it leaves.
func (db *DB) writeTurn(q chat.TurnQuery, ts *chat.TurnState, w *chat.TurnWrite) (*writes, func([]*firestore.WriteResult) *chat.TurnState, error) {
	v, _ := stateVersion(ts)
	r, _ := db.turnRefs(q)
	b := db.newWrites()
	sref := db.sessionRef(q.SessionID)
	wd, next, err := db.writeTurnContext(b, sref, v.st, ts.Session, w)
	if err != nil {
		return nil, nil, err
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
	if err := writeSlot(b, r, q, ts, w); err != nil {
		return nil, nil, err
	}
	if w.Tokens > 0 {
		db.addTokens(b, q.UserID, q.Day, w.Tokens, w.ByModel)
	}
	writeDraft(b, r.draft, q.UserID, ts, w.Draft)
	if j := w.Job; j != nil { // the after-turn job, in the reply's commit
		b.Create(db.jobRef(j.SessionID, j.ID), toJobDoc(j))
	}
	return b, func(res []*firestore.WriteResult) *chat.TurnState {
		nv := &turnVersion{st: v.st.after(b, res, sref, db.tailRef(q.SessionID), w.Session, w.Tail, wd, next)}
		out := ts.Apply(q, w)
		out.Version = nv
		out.Session, out.Tail = nv.st.s, nv.st.t // as stored, with what they were written as
		if w.Slot >= 0 && w.Slot < len(out.SlotVersions) {
			out.SlotVersions[w.Slot], _ = b.time(res, r.slots[w.Slot])
		}
		if d := w.Draft; d != nil && d.Create {
			if t, ok := b.time(res, r.draft); ok {
				out.DraftVersion = t
			}
		}
		if res == nil { // committed in a transaction, which reports no update times
			out.Version, out.SlotVersions = nil, nil // so a RunTurn given this state reads afresh
		}
		return out
	}, nil
}

func stateVersion(st *chat.TurnState) (*turnVersion, bool) {
	if st == nil {
		return nil, false
	}
	v, ok := st.Version.(*turnVersion)
	return v, ok
}

// writeTurnContext writes in b the session and context w changes, as
// read in st (was: the session as read): the tail document, or, for a claim's
// plain append, the session's tailNext (see next.go), which it returns.
func (db *DB) writeTurnContext(b *writes, sref *firestore.DocumentRef, st *stored, was *sessions.Session, w *chat.TurnWrite) (*tailDoc, *tailNextDoc, error) {
	if w.Session != nil {
		db.writeSession(b, sref, st, w.Session)
	}
	if w.Tail == nil {
		return nil, nil, nil
	}
	if w.Session != nil {
		if next := deferTail(st, w.Session, w.Tail, w.Messages); next != nil {
			b.addUpdate(sref, nextUpdate(next))
			return nil, next, nil
		}
	}
	s := w.Session
	if s == nil {
		s = was
	}
	wd, err := db.writeContext(b, st, s, w.Tail)
	if err != nil {
		return nil, nil, err
	}
	if st.next != nil && w.Session != nil {
		b.addUpdate(sref, nextUpdate(nil)) // the tail document has it now, or it is stale
	}
	return wd, nil, nil
}

// writeSlot writes in b the rate-limit slot w takes, on condition that it
// is as ts read it.
func writeSlot(b *writes, r turnRefs, q chat.TurnQuery, ts *chat.TurnState, w *chat.TurnWrite) error {
	if w.Slot < 0 {
		return nil
	}
	if w.Slot >= len(r.slots) {
		return errs.Errorf(errs.EINTERNAL, "turn slot %d of %d", w.Slot, len(r.slots))
	}
	d := slotDoc{UserID: q.UserID, Minute: w.Minute}
	if t := slotTime(ts, w.Slot); t.IsZero() {
		b.Create(r.slots[w.Slot], d)
	} else {
		b.Update(r.slots[w.Slot], fieldUpdates(d), firestore.LastUpdateTime(t))
	}
	return nil
}

// writeDraft starts the session's draft in b, or ends it on condition
// that it is as ts read it.
func writeDraft(b *writes, ref *firestore.DocumentRef, userID string, ts *chat.TurnState, d *chat.DraftWrite) {
	switch {
	case d == nil:
	case d.Create:
		b.Set(ref, draftDoc{UserID: userID, ReplyID: d.ReplyID, UserMessageID: d.UserMessageID, UpdatedAt: time.Now().UTC()})
	default:
		if t, ok := ts.DraftVersion.(time.Time); ok && ts.DraftReplyID == d.ReplyID {
			b.Delete(ref, firestore.LastUpdateTime(t))
		}
	}
}

// ReadTurn reads what q names for a caller that writes nothing, in one
// round trip.
func (db *DB) ReadTurn(ctx context.Context, q chat.TurnQuery) (*chat.TurnState, error) {
	var out *chat.TurnState
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		var err error
		out, err = db.readTurnState(get, q, db.readStored)
		return nil, err
	})
	return out, err
}

// readTurnState reads what q names in one round trip with read.
func (db *DB) readTurnState(get getAll, q chat.TurnQuery, read func(getAll, string, ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error)) (*chat.TurnState, error) {
	r, refs := db.turnRefs(q)
	st, snaps, err := read(get, q.SessionID, refs...)
	if err != nil {
		return nil, err
	}
	ts := &chat.TurnState{Tail: st.t, Version: &turnVersion{st: st}}
	if st.exists {
		ts.Session, ts.ContextVersion = st.s, st.version()
	}
	rest := snapshots(snaps)
	if err := decodeUserDocs(q, r, &rest, ts); err != nil {
		return nil, err
	}
	if err := decodeMessages(r, &rest, ts); err != nil {
		return nil, err
	}
	if ts.Slots, ts.SlotVersions, err = decodeSlots(rest); err != nil {
		return nil, err
	}
	return ts, nil
}

// turnRefs are the documents a turn reads, after its context's.
type turnRefs struct {
	asked, answer, day, memory, draft, deleted *firestore.DocumentRef
	keyed                                      *firestore.DocumentRef // the message under Key, when Asked is AskedID's
	slots                                      []*firestore.DocumentRef
}

func (db *DB) turnRefs(q chat.TurnQuery) (turnRefs, []*firestore.DocumentRef) {
	msgs := db.messagesOf(q.SessionID)
	r := turnRefs{memory: db.memoryRef(q.UserID), draft: db.draftRef(q.SessionID)}
	var list []*firestore.DocumentRef
	if q.Day != "" {
		r.day = db.dayRef(q.UserID, q.Day)
		list = append(list, r.day)
	}
	if q.Memory {
		list = append(list, r.memory)
	}
	if q.Draft {
		list = append(list, r.draft)
	}
	if q.Deleted {
		r.deleted = db.deletedRef(q.UserID)
		list = append(list, r.deleted)
	}
	switch {
	case q.AskedID != "":
		r.asked = msgs.Doc(q.AskedID)
	case q.Key != "":
		r.asked = msgs.Doc(history.KeyedMessageID(q.Key, 0))
	}
	if r.asked != nil {
		list = append(list, r.asked)
	}
	if q.ReplyID != "" {
		r.answer = msgs.Doc(q.ReplyID)
		list = append(list, r.answer)
	}
	if q.AskedID != "" && q.Key != "" {
		r.keyed = msgs.Doc(history.KeyedMessageID(q.Key, 0))
		list = append(list, r.keyed)
	}
	for _, i := range q.Slots {
		r.slots = append(r.slots, db.slotRef(q.UserID, i))
	}
	return r, append(list, r.slots...)
}

// decodeUserDocs puts the user's documents a turn read into ts, in the
// order turnRefs asked for them: the day's spend, the memory block, the
// session's draft and the user's list of deleted sessions.
func decodeUserDocs(q chat.TurnQuery, r turnRefs, rest *snapshots, ts *chat.TurnState) error {
	if r.day != nil {
		var day dayDoc
		if err := dataTo(rest.next(), &day); err != nil {
			return err
		}
		ts.DayTokens = day.Tokens
	}
	if q.Memory {
		u, err := decodeMemoryUser(rest.next(), q.UserID) // a user with none yet too
		if err != nil {
			return err
		}
		ts.Memory = chat.MemoryOf(u)
	}
	if q.Draft {
		if snap := rest.next(); snap.Exists() {
			var d draftDoc
			if err := dataTo(snap, &d); err != nil {
				return err
			}
			ts.DraftReplyID, ts.DraftText, ts.DraftVersion = d.ReplyID, d.Text, snap.UpdateTime
		}
	}
	if r.deleted != nil {
		v, err := decodeDeleted(rest.next())
		if err != nil {
			return err
		}
		ts.Deleted, ts.OffPath = v.Deleted, v.OffPath
	}
	return nil
}

// decodeMessages puts the messages a turn read into ts: the one it
// answers, its reply, and whether its key is used.
func decodeMessages(r turnRefs, rest *snapshots, ts *chat.TurnState) error {
	var err error
	if r.asked != nil {
		if ts.Asked, err = optionalMessage(rest.next()); err != nil {
			return err
		}
	}
	if r.answer != nil {
		if ts.Answer, err = optionalMessage(rest.next()); err != nil {
			return err
		}
	}
	if r.keyed != nil {
		ts.KeyUsed = rest.next().Exists()
	}
	return nil
}

// snapshots are the documents of a batched read still to decode, in the
// order they were asked for.
type snapshots []*firestore.DocumentSnapshot

// next is the first of s, which it drops.
func (s *snapshots) next() *firestore.DocumentSnapshot {
	snap := (*s)[0]
	*s = (*s)[1:]
	return snap
}

// optionalMessage is the message snap holds; nil if there is none.
func optionalMessage(snap *firestore.DocumentSnapshot) (*history.Message, error) {
	if !snap.Exists() {
		return nil, nil
	}
	m, _, err := decodeMessage(snap)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// decodeSlots are the minutes the slot documents read were last taken in
// (0: never), and their update times (zero: no document).
func decodeSlots(snaps []*firestore.DocumentSnapshot) ([]int64, []chat.Version, error) {
	minutes, versions := make([]int64, len(snaps)), make([]chat.Version, len(snaps))
	for i, snap := range snaps {
		var d slotDoc
		if err := dataTo(snap, &d); err != nil {
			return nil, nil, err
		}
		versions[i] = time.Time{}
		if snap.Exists() {
			minutes[i], versions[i] = d.Minute, snap.UpdateTime
		}
	}
	return minutes, versions, nil
}

// slotTime is the update time of slot i of ts as read (zero: none).
func slotTime(ts *chat.TurnState, i int) time.Time {
	if i < len(ts.SlotVersions) {
		t, _ := ts.SlotVersions[i].(time.Time)
		return t
	}
	return time.Time{}
}
