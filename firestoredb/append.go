package firestoredb

import (
	"context"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// RunAppend reads the session, its context, the key's first message (or,
// after a commit whose answer was lost, an unkeyed batch's first id), the
// user's window and the day's spend in one BatchGetDocuments, and commits
// the messages, the session, what changed of its context, the window and
// the spend (each on condition of its update time) in one Commit; see
// chat.TurnStore.
func (db *DB) RunAppend(ctx context.Context, q chat.AppendQuery, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (string, error) {
	after, _, err := db.AppendKnown(ctx, q, nil, nil, plan)
	if err != nil {
		return "", err
	}
	return after.ContextVersion, nil
}

// AppendKnown runs an append as RunAppend does, but given known (the
// session and its context as a cache kept them, at the version q.IfMatch
// names) it plans from it instead of reading them, and given usage too
// (the user's window and spend on q.Day, as an earlier AppendKnown
// returned them) it reads nothing: the commit's conditions tell whether
// all that is still current, and its Create of the key's messages whether
// the key is new; a refused commit reads and plans again. It returns the
// session and its context as the commit left them (with a nil write, as
// read), and the user's window and spend; their Version, and usage, are
// nil when the store cannot tell them.
func (db *DB) AppendKnown(ctx context.Context, q chat.AppendQuery, known *chat.TurnState, usage any, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (*chat.TurnState, any, error) {
	msgs := db.messagesOf(q.SessionID)
	sref, uref, dref := db.sessionRef(q.SessionID), db.usageRef(q.UserID), db.dayRef(q.UserID, q.Day)
	var names []string // an unkeyed batch's ids, kept across attempts
	written, first := false, true
	plannedSeq := -1 // of the first message the last commit tried wrote
	var read *stored // as read
	var ur usageRead
	var b *writes
	var wd *windowDoc
	var w *chat.AppendWrite
	res, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		extra := []*firestore.DocumentRef{uref, dref}
		switch {
		case q.Key != "":
			extra = append(extra, msgs.Doc(history.KeyedMessageID(q.Key, 0)))
		case written:
			extra = append(extra, msgs.Doc(names[0]))
		}
		st, kept, snaps, err := db.appendStart(get, q, first, known, usage, extra)
		if kept != nil {
			ur = *kept
		}
		first, read, w = false, st, nil
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(q.SessionID)
		}
		if snaps != nil {
			if q.Key == "" && written && snaps[2].Exists() {
				return nil, nil // the last commit landed
			}
			if ur, err = readUsage(snaps[0], snaps[1], q.Day); err != nil {
				return nil, err
			}
		}
		as := &chat.AppendState{Session: st.s, Tail: st.t, Usage: ur.usage(q.UserID), Version: st.version()}
		if q.Key != "" && snaps != nil && snaps[2].Exists() {
			if as.Stored, err = readBatch(get, msgs, q.Key, snaps[2]); err != nil {
				return nil, err
			}
			// A commit refused may still have been this one's: the
			// client tries a commit again when its answer is lost.
			as.MayHaveLanded = as.Stored[0].Seq == plannedSeq
		}
		if w, err = plan(as); err != nil || w == nil {
			return nil, err
		}
		if q.Key == "" {
			names = nameBatch(names, w.Messages, msgs)
		}
		if len(w.Messages) > 0 {
			plannedSeq = w.Messages[0].Seq
		}
		if b, wd, err = db.writeAppend(q, st, ur, w); err != nil {
			return nil, err
		}
		written = true
		return b, nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case w == nil && read != nil: // as read just now: nothing was planned
		return stateOf(read), ur, nil
	case w == nil || res == nil: // written in a transaction, which reports no update times
		return &chat.TurnState{}, nil, nil
	}
	after := read.after(b, res, sref, db.windowRef(q.SessionID), w.Session, w.Tail, wd, nil)
	if now, ok := ur.after(b, res, uref, dref, w.Window, w.Tokens); ok {
		return stateOf(after), now, nil
	}
	return stateOf(after), nil, nil
}

// nameBatch names an unkeyed batch's messages with names, which it extends
// with new ids as needed and returns: the same ids on every attempt, so
// that a commit whose answer was lost is found by them.
func nameBatch(names []string, batch []history.Message, msgs *firestore.CollectionRef) []string {
	for len(names) < len(batch) {
		names = append(names, msgs.NewDoc().ID)
	}
	for i := range batch {
		batch[i].ID = names[i]
	}
	return names
}

// writeAppend plans the commit of an append's write w over the session
// and context st and the user's window and spend ur, each on condition
// that it is as read, and returns it with the window document it writes.
func (db *DB) writeAppend(q chat.AppendQuery, st *stored, ur usageRead, w *chat.AppendWrite) (*writes, *windowDoc, error) {
	b := db.newWrites()
	sref := db.sessionRef(q.SessionID)
	db.createMessages(b, q.SessionID, q.Key, w.Messages)
	w.Tail.SetIDs(w.Messages)
	db.writeSession(b, sref, st, w.Session)
	wd, err := db.writeContext(b, st, w.Session, w.Tail)
	if err != nil {
		return nil, nil, err
	}
	if st.next != nil {
		b.addUpdate(sref, nextUpdate(nil)) // the window has it now, or it is stale
	}
	w.Window.UserID = q.UserID
	writeWindow(b, db.usageRef(q.UserID), ur.windowTime, w.Window, "")
	if w.Tokens > 0 {
		db.spendOn(b, q.UserID, ur, w.Tokens)
	}
	return b, wd, nil
}

// appendStart is what an attempt of an append starts from. The first,
// given known at the version the app read (q.IfMatch), starts from it:
// the commit's conditions tell whether it is still current. Given usage
// too, it reads nothing and returns it as kept; else it reads extra (the
// user's window and spend, and the key's message). Any other attempt
// reads the session and its context with extra.
func (db *DB) appendStart(get getAll, q chat.AppendQuery, first bool, known *chat.TurnState, usage any, extra []*firestore.DocumentRef) (_ *stored, kept *usageRead, _ []*firestore.DocumentSnapshot, _ error) {
	k := knownAt(known, q.IfMatch)
	if !first || k == nil {
		st, snaps, err := db.readStored(get, q.SessionID, extra...)
		return st, nil, snaps, err
	}
	if ku, ok := usage.(usageRead); ok && ku.day == q.Day {
		return k, &ku, nil, nil // nothing to read
	}
	snaps, err := get(extra)
	return k, nil, snaps, err
}

// knownAt is the session and context known holds, if it is at version v.
func knownAt(known *chat.TurnState, v string) *stored {
	kv, ok := stateVersion(known)
	if !ok || v == "" || known.ContextVersion != v || kv.st.version() != v {
		return nil
	}
	return kv.st.clone()
}
