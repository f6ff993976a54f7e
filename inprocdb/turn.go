package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
)

// ReadTurn reads what q names.
func (db *DB) ReadTurn(ctx context.Context, q chat.TurnQuery) (*chat.TurnState, error) {
	return db.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil })
}

// RunTurn reads, plans and writes under the store's one lock, so nothing
// can change in between and prev is not needed.
func (db *DB) RunTurn(_ context.Context, q chat.TurnQuery, _ *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	st := db.readTurnLocked(q)
	w, err := plan(st)
	if err != nil || w == nil {
		return st, err
	}
	return db.applyTurnLocked(q, st, w)
}

// readTurnLocked is what q names, as stored.
func (db *DB) readTurnLocked(q chat.TurnQuery) *chat.TurnState {
	st := &chat.TurnState{Tail: db.tail(q.SessionID), DayTokens: db.days[q.UserID][q.Day]}
	if s, ok := db.sessions[q.SessionID]; ok {
		st.Session = s.Clone()
		st.ContextVersion = contextVersion(st.Session, st.Tail)
	}
	if q.Deleted { // the store's own sessions are the list
		v := db.visibility(q.UserID)
		st.Deleted, st.OffPath = v.Deleted, v.OffPath
	}
	if q.AskedID != "" {
		for _, m := range db.messages[q.SessionID] {
			if m.ID == q.AskedID {
				m = cloneMessage(m)
				st.Asked = &m
			}
		}
	}
	if q.Key != "" {
		b := db.batch(q.SessionID, q.Key)
		if len(b) > 0 && q.AskedID == "" {
			st.Asked = &b[0]
		}
		st.KeyUsed = len(b) > 0 && q.AskedID != ""
	}
	if seq, ok := db.replies[q.SessionID][q.ReplyID]; ok && q.ReplyID != "" {
		m := cloneMessage(db.messages[q.SessionID][seq])
		st.Answer = &m
	}
	st.Slots = make([]int64, len(q.Slots))
	for i, id := range q.Slots {
		if id < len(db.slots[q.UserID]) {
			st.Slots[i] = db.slots[q.UserID][id]
		}
	}
	if q.Memory {
		u, ok := db.users[q.UserID]
		if !ok {
			u = longterm.User{UserID: q.UserID}
		}
		u.Facts = append([]longterm.Fact(nil), u.Facts...)
		st.Memory = chat.MemoryOf(&u)
	}
	if d, ok := db.drafts[q.SessionID]; q.Draft && ok {
		st.DraftReplyID, st.DraftText, st.DraftVersion = d.replyID, d.text, d.version
	}
	return versioned(st)
}

// applyTurnLocked stores w, planned on st, and returns the state it
// leaves.
func (db *DB) applyTurnLocked(q chat.TurnQuery, st *chat.TurnState, w *chat.TurnWrite) (*chat.TurnState, error) {
	if w.Session != nil {
		if st.Session == nil {
			if _, ok := db.sessions[w.Session.ID]; ok {
				return nil, errs.Errorf(errs.EINTERNAL, "inprocdb: session %q exists", w.Session.ID)
			}
			db.accounts[q.UserID] = w.Session.CreatedAt // as Firestore's commit that creates it
		}
		db.sessions[q.SessionID] = w.Session.Clone()
	}
	if err := db.storeTurnMessagesLocked(q, w.Messages); err != nil {
		return nil, err
	}
	if w.Tail != nil {
		db.tails[q.SessionID] = cloneTail(w.Tail)
	}
	if w.Slot >= 0 && w.Slot < len(q.Slots) {
		id := q.Slots[w.Slot]
		slots := db.slots[q.UserID]
		for len(slots) <= id {
			slots = append(slots, 0)
		}
		slots[id] = w.Minute
		db.slots[q.UserID] = slots
	}
	if w.Tokens > 0 {
		db.addTokensLocked(q.UserID, q.Day, w.Tokens)
		for m, n := range w.ByModel {
			key := q.UserID + " " + q.Day
			if db.models[key] == nil {
				db.models[key] = map[string]chat.ModelTokens{}
			}
			db.models[key][m] = db.models[key][m].Add(n)
		}
	}
	if j := w.Job; j != nil {
		db.putJobLocked(*j)
	}
	if d := w.Draft; d != nil {
		switch cur := db.drafts[q.SessionID]; {
		case d.Create:
			db.draftSeq++
			db.drafts[q.SessionID] = &draft{userID: q.UserID, replyID: d.ReplyID, version: db.draftSeq}
		case cur != nil && cur.replyID == d.ReplyID:
			delete(db.drafts, q.SessionID)
		}
	}
	out := st.Apply(q, w)
	if w.Draft != nil && w.Draft.Create {
		out.DraftVersion = db.draftSeq
	}
	if s, ok := db.sessions[q.SessionID]; ok {
		out.Session = s.Clone()
	}
	if w.Tail != nil {
		out.Tail = cloneTail(w.Tail)
	}
	return versioned(out), nil
}

// storeTurnMessagesLocked stores the messages a turn's commit creates,
// each under its key or as the turn's reply.
func (db *DB) storeTurnMessagesLocked(q chat.TurnQuery, msgs []history.Message) error {
	for _, m := range msgs {
		if m.Seq != len(db.messages[q.SessionID]) {
			return errs.Errorf(errs.EINTERNAL, "inprocdb: seq %d out of order", m.Seq)
		}
		db.messages[q.SessionID] = append(db.messages[q.SessionID], cloneMessage(m))
		switch {
		case m.ClientMessageID != "":
			if db.keys[q.SessionID] == nil {
				db.keys[q.SessionID] = map[string][]int{}
			}
			// The message under the key is the one named by it (a batch's
			// others follow it, in the order of their names).
			seqs := db.keys[q.SessionID][m.ClientMessageID]
			if m.ID == history.KeyedMessageID(m.ClientMessageID, 0) {
				seqs = append([]int{m.Seq}, seqs...)
			} else {
				seqs = append(seqs, m.Seq)
			}
			db.keys[q.SessionID][m.ClientMessageID] = seqs
		case q.ReplyID != "" && m.ID == q.ReplyID:
			if db.replies[q.SessionID] == nil {
				db.replies[q.SessionID] = map[string]int{}
			}
			db.replies[q.SessionID][m.ID] = m.Seq
		}
	}
	return nil
}
