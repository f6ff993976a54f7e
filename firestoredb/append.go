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
// the messages, the session, what changed of its context, the window (on
// condition of its update time) and the spend's increment in one Commit;
// see chat.TurnStore.
func (db *DB) RunAppend(ctx context.Context, q chat.AppendQuery, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (string, error) {
	msgs := db.messagesOf(q.SessionID)
	sref, uref, dref := db.sessionRef(q.SessionID), db.usageRef(q.UserID), db.dayRef(q.UserID, q.Day)
	var names []string // an unkeyed batch's ids, kept across attempts
	written, first := false, true
	var read, after *stored // as read; as the last plan's commit leaves it
	var b *writes
	var wd *windowDoc
	var w *chat.AppendWrite
	res, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		extra := []*firestore.DocumentRef{uref, dref}
		switch {
		case q.Key != "":
			extra = append(extra, msgs.Doc(history.KeyDocID(q.Key, 0)))
		case written:
			extra = append(extra, msgs.Doc(names[0]))
		}
		var st *stored
		var snaps []*firestore.DocumentSnapshot
		var err error
		if k := db.kept.get(q.SessionID, q.IfMatch); first && k != nil {
			// What the app's context was read from: the commit's
			// conditions tell whether it still is.
			st = k
			snaps, err = get(extra)
		} else {
			db.kept.drop(q.SessionID)
			st, snaps, err = db.readStored(get, q.SessionID, extra...)
		}
		first, read, w = false, st, nil
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(q.SessionID)
		}
		if q.Key == "" && written && snaps[2].Exists() {
			return nil, nil // the last commit landed
		}
		u, _, err := readWindow(snaps[0], snaps[1], q.UserID, q.Day, "")
		if err != nil {
			return nil, err
		}
		as := &chat.AppendState{Session: st.s, Tail: st.t, Usage: u, Version: st.version()}
		if q.Key != "" && snaps[2].Exists() {
			if as.Stored, err = readBatch(get, msgs, q.Key, snaps[2]); err != nil {
				return nil, err
			}
		}
		if w, err = plan(as); err != nil || w == nil {
			return nil, err
		}
		if q.Key == "" {
			for len(names) < len(w.Messages) {
				names = append(names, msgs.NewDoc().ID)
			}
			for i := range w.Messages {
				w.Messages[i].ID = names[i]
			}
		}
		b = db.newWrites()
		db.createMessages(b, q.SessionID, q.Key, w.Messages)
		w.Tail.SetIDs(w.Messages)
		writeSession(b, sref, st, w.Session)
		if wd, err = db.writeContext(b, st, w.Session, w.Tail); err != nil {
			return nil, err
		}
		if st.next != nil {
			b.addUpdate(sref, nextUpdate(nil)) // the window has it now, or it is stale
		}
		w.Window.UserID = q.UserID
		writeWindow(b, snaps[0], w.Window, "")
		if w.Tokens > 0 {
			db.addTokens(b, q.UserID, q.Day, w.Tokens)
		}
		written = true
		return b, nil
	})
	switch {
	case err != nil:
		db.kept.drop(q.SessionID)
		return "", err
	case w == nil || res == nil: // nothing written, or written in a transaction, which reports no update times
		if w == nil && read != nil {
			return read.version(), nil
		}
		return "", nil
	}
	after = read.after(b, res, sref, db.windowRef(q.SessionID), w.Session, w.Tail, wd, nil)
	db.kept.put(after)
	return after.version(), nil
}
