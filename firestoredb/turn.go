package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// turnVersion is what a chat.TurnState was read (or written) as: the
// session and its context with the update times a commit is conditioned
// on (each slot's is among the state's SlotVersions).
type turnVersion struct {
	st *stored
}

// draftDoc is chat_sessions/{sid}/context/draft: the partial text of the
// session's streaming reply, which clients follow with a listener.
type draftDoc struct {
	UserID        string    `firestore:"userId"`
	ReplyID       string    `firestore:"replyId"`
	UserMessageID string    `firestore:"userMessageId"`
	Text          string    `firestore:"text"`
	StopRequested bool      `firestore:"stopRequested"`
	UpdatedAt     time.Time `firestore:"updatedAt"`
}

func (db *DB) draftRef(sessionID string) *firestore.DocumentRef {
	return db.contextOf(sessionID).Doc(DraftDocID)
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
	if prev != nil || q.AskedID != "" {
		out, _, err := db.runTurn(ctx, q, prev, plan, false)
		return out, err
	}
	return db.runTurnRead(ctx, q, plan, true)
}

// runTurnRead runs a turn from a read; with leaveKeyOut, first from one
// that leaves the message under its key out (see RunTurn).
func (db *DB) runTurnRead(ctx context.Context, q chat.TurnQuery, plan func(*chat.TurnState) (*chat.TurnWrite, error), leaveKeyOut bool) (*chat.TurnState, error) {
	out, keyLeftOut, err := db.runTurn(ctx, q, nil, plan, leaveKeyOut)
	if keyLeftOut && q.Key != "" {
		out, _, err = db.runTurn(ctx, q, nil, plan, false)
	}
	return out, err
}

// runTurn reads (unless given prev), plans and commits, until the commit
// lands or plan writes nothing. With leaveKeyOut its first read leaves
// the message under the key out; keyLeftOut reports that plan refused, or
// wrote nothing, on such a read.
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
		return nil, keyLeftOut, err
	case written == nil:
		return unchanged, keyLeftOut, nil
	}
	return written(res), false, nil
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
		r.asked = msgs.Doc(history.KeyDocID(q.Key, 0))
	}
	if r.asked != nil {
		list = append(list, r.asked)
	}
	if q.ReplyID != "" {
		r.answer = msgs.Doc(q.ReplyID)
		list = append(list, r.answer)
	}
	if q.AskedID != "" && q.Key != "" {
		r.keyed = msgs.Doc(history.KeyDocID(q.Key, 0))
		list = append(list, r.keyed)
	}
	for _, i := range q.Slots {
		r.slots = append(r.slots, db.slotRef(q.UserID, i))
	}
	return r, append(list, r.slots...)
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

// readTurnState reads what q names in one round trip with read.
func (db *DB) readTurnState(get getAll, q chat.TurnQuery, read func(getAll, string, ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error)) (*chat.TurnState, error) {
	r, refs := db.turnRefs(q)
	st, snaps, err := read(get, q.SessionID, refs...)
	if err != nil {
		return nil, err
	}
	ts := &chat.TurnState{Tail: st.t, Version: &turnVersion{st: st}, Slots: make([]int64, len(r.slots)),
		SlotVersions: make([]any, len(r.slots))}
	if st.exists {
		ts.Session, ts.ContextVersion = st.s, st.version()
	}
	rest := snaps
	if r.day != nil {
		var day dayDoc
		if err := dataTo(rest[0], &day); err != nil {
			return nil, err
		}
		ts.DayTokens, rest = day.Tokens, rest[1:]
	}
	if q.Memory {
		u, err := decodeMemoryUser(rest[0], q.UserID) // a user with none yet too
		if err != nil {
			return nil, err
		}
		ts.Memory, rest = chat.MemoryOf(u), rest[1:]
	}
	if q.Draft {
		if rest[0].Exists() {
			var d draftDoc
			if err := dataTo(rest[0], &d); err != nil {
				return nil, err
			}
			ts.DraftReplyID, ts.DraftText, ts.DraftVersion = d.ReplyID, d.Text, rest[0].UpdateTime
		}
		rest = rest[1:]
	}
	if r.deleted != nil {
		v, err := decodeDeleted(rest[0])
		if err != nil {
			return nil, err
		}
		ts.Deleted, ts.OffPath = v.Deleted, v.OffPath
		rest = rest[1:]
	}
	if r.asked != nil {
		if rest[0].Exists() {
			m, _, err := decodeMessage(rest[0])
			if err != nil {
				return nil, err
			}
			ts.Asked = &m
		}
		rest = rest[1:]
	}
	if r.answer != nil {
		if rest[0].Exists() {
			m, _, err := decodeMessage(rest[0])
			if err != nil {
				return nil, err
			}
			ts.Answer = &m
		}
		rest = rest[1:]
	}
	if r.keyed != nil {
		ts.KeyUsed = rest[0].Exists()
		rest = rest[1:]
	}
	for i, snap := range rest {
		var d slotDoc
		if err := dataTo(snap, &d); err != nil {
			return nil, err
		}
		ts.SlotVersions[i] = time.Time{}
		if snap.Exists() {
			ts.Slots[i], ts.SlotVersions[i] = d.Minute, snap.UpdateTime
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
		db.writeSession(b, sref, v.st, w.Session)
	}
	s := w.Session
	if s == nil {
		s = ts.Session
	}
	var wd *windowDoc
	var next *tailNextDoc // the message the session carries for its window
	if w.Tail != nil && w.Session != nil {
		next = deferTail(v.st, w.Session, w.Tail, w.Messages)
	}
	switch {
	case next != nil:
		b.addUpdate(sref, nextUpdate(next))
	case w.Tail != nil:
		var err error
		if wd, err = db.writeContext(b, v.st, s, w.Tail); err != nil {
			return nil, nil, err
		}
		if v.st.next != nil && w.Session != nil {
			b.addUpdate(sref, nextUpdate(nil)) // the window has it now, or it is stale
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
	if w.Slot >= 0 {
		if w.Slot >= len(r.slots) {
			return nil, nil, errs.Errorf(errs.EINTERNAL, "turn slot %d of %d", w.Slot, len(r.slots))
		}
		d := slotDoc{UserID: q.UserID, Minute: w.Minute}
		if t := slotTime(ts, w.Slot); t.IsZero() {
			b.Create(r.slots[w.Slot], d)
		} else {
			b.Update(r.slots[w.Slot], fieldUpdates(d), firestore.LastUpdateTime(t))
		}
	}
	if w.Tokens > 0 {
		db.addTokens(b, q.UserID, q.Day, w.Tokens, w.ByModel)
	}
	if d := w.Draft; d != nil {
		if d.Create {
			b.Set(r.draft, draftDoc{UserID: q.UserID, ReplyID: d.ReplyID, UserMessageID: d.UserMessageID, UpdatedAt: time.Now().UTC()})
		} else if t, ok := ts.DraftVersion.(time.Time); ok && ts.DraftReplyID == d.ReplyID {
			b.Delete(r.draft, firestore.LastUpdateTime(t))
		}
	}
	return b, func(res []*firestore.WriteResult) *chat.TurnState {
		nv := &turnVersion{st: v.st.after(b, res, sref, db.windowRef(q.SessionID), w.Session, w.Tail, wd, next)}
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

// SaveDraft writes the partial text of the session's streaming reply, on
// condition that the draft is as this turn last wrote it. If it is not, it
// reads it: a stop was requested, or another turn took the draft over
// (chat.ErrDraftTaken).
func (db *DB) SaveDraft(ctx context.Context, d *chat.Draft) (bool, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	ref := db.draftRef(d.SessionID)
	for range 3 {
		if t, ok := d.Version.(time.Time); ok && !t.IsZero() {
			res, err := ref.Update(ctx, []firestore.Update{{Path: "text", Value: d.Text}, {Path: "updatedAt", Value: time.Now().UTC()}},
				firestore.LastUpdateTime(t))
			if err == nil {
				d.Version = res.UpdateTime
				return false, nil
			}
			if !stale(err) {
				return false, translate(err)
			}
		}
		snap, err := ref.Get(ctx)
		if isNotFound(err) {
			return false, chat.ErrDraftTaken
		}
		if err != nil {
			return false, translate(err)
		}
		var cur draftDoc
		if err := dataTo(snap, &cur); err != nil {
			return false, err
		}
		if cur.ReplyID != d.ReplyID {
			return false, chat.ErrDraftTaken
		}
		if cur.StopRequested {
			return true, nil
		}
		d.Version = snap.UpdateTime
	}
	return false, errs.Errorf(errs.EUNAVAILABLE, "the draft keeps changing")
}

// RequestStop marks the session's draft to be stopped if it follows
// replyID and belongs to userID.
func (db *DB) RequestStop(ctx context.Context, userID, sessionID, replyID string) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	ref := db.draftRef(sessionID)
	for range 5 {
		snap, err := ref.Get(ctx)
		if isNotFound(err) {
			return errs.Errorf(errs.ENOTFOUND, "no reply %s is in progress", replyID)
		}
		if err != nil {
			return translate(err)
		}
		var d draftDoc
		if err := dataTo(snap, &d); err != nil {
			return err
		}
		if d.UserID != userID || d.ReplyID != replyID {
			return errs.Errorf(errs.ENOTFOUND, "no reply %s is in progress", replyID)
		}
		_, err = ref.Update(ctx, []firestore.Update{{Path: "stopRequested", Value: true}}, firestore.LastUpdateTime(snap.UpdateTime))
		if err == nil || !stale(err) {
			return translate(err)
		}
	}
	return errs.Errorf(errs.EUNAVAILABLE, "the reply kept changing; try again")
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

// slotTime is the update time of slot i of ts as read (zero: none).
func slotTime(ts *chat.TurnState, i int) time.Time {
	if i < len(ts.SlotVersions) {
		t, _ := ts.SlotVersions[i].(time.Time)
		return t
	}
	return time.Time{}
}
