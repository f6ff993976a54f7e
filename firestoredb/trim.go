package firestoredb

import (
	"context"
	"reflect"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// HistoriesDue queries sessions by historyStartAt or historyExpiresAt,
// which are null (and so never match) for a session without messages or,
// for the second, without a period of its own. Single-field indexes serve
// both: the sweep never scans the collection.
func (db *DB) HistoriesDue(ctx context.Context, q retention.TrimQuery, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	field := dueField(q)
	fq := db.client.Collection(SessionsCollection).
		Where(field, "<=", q.At).
		OrderBy(field, firestore.Asc).
		OrderBy(firestore.DocumentID, firestore.Asc).
		Limit(limit)
	if after != nil {
		fq = fq.StartAfter(after.ExpiresAt, after.ID)
	}
	return readSessions(ctx, fq)
}

// CountHistoriesDue counts with an aggregation on the same index.
func (db *DB) CountHistoriesDue(ctx context.Context, q retention.TrimQuery) (int, error) {
	field := dueField(q)
	return db.count(ctx, db.client.Collection(SessionsCollection).Where(field, "<=", q.At))
}

func dueField(q retention.TrimQuery) string {
	if q.OwnPeriod {
		return "historyExpiresAt"
	}
	return "historyStartAt"
}

// FirstMessageAfter is one query on the messages' createdAt (a
// single-field index), reading one document.
func (db *DB) FirstMessageAfter(ctx context.Context, sessionID string, t time.Time) (int, bool, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.sessionRef(sessionID).Collection(MessagesCollection).
		Where("createdAt", ">", t).OrderBy("createdAt", firestore.Asc).Limit(1).
		Select("seq").Documents(ctx).GetAll()
	if err != nil || len(snaps) == 0 {
		return 0, false, translate(err)
	}
	seq, err := snaps[0].DataAt("seq")
	if err != nil {
		return 0, false, translate(err)
	}
	n, _ := seq.(int64)
	return int(n), true, nil
}

// TrimMessages is one query for the page's messages and then, optimistic
// like every write here, one batched read (the session, its tail document, its
// recall marker) and one commit: the page's deletes (each on condition
// that the message is still there, so that no two sweeps count one
// message twice), every unit of search holding their text (see
// unitsHolding), and the session and tail document as fn left them.
func (db *DB) TrimMessages(ctx context.Context, sessionID string, before, limit int, fn retention.TrimFunc) (int, bool, error) {
	msgs := db.sessionRef(sessionID).Collection(MessagesCollection)
	marker := db.contextOf(sessionID).Doc(recallMarkerDocID)
	deleted, done := 0, false
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		snaps, err := msgs.Where("seq", "<", before).OrderBy("seq", firestore.Asc).Limit(limit).Documents(ctx).GetAll()
		if err != nil {
			return nil, err
		}
		gone := make([]history.Message, len(snaps))
		for i, snap := range snaps {
			if gone[i], _, err = decodeMessage(snap); err != nil {
				return nil, err
			}
		}
		st, extra, err := db.readStored(get, sessionID, marker)
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(sessionID)
		}
		s, t := st.s.Clone(), st.t.Clone()
		done = len(gone) < limit
		if err := fn(s, t, gone, done); err != nil {
			return nil, err
		}
		w := db.newWrites()
		if !reflect.DeepEqual(s, st.s) {
			db.writeSession(w, db.sessionRef(sessionID), st, s)
		}
		if !reflect.DeepEqual(t, st.t) {
			if _, err := db.writeContext(w, st, s, t); err != nil {
				return nil, err
			}
		}
		for _, snap := range snaps {
			w.Delete(snap.Ref, firestore.Exists)
		}
		if extra[0].Exists() { // units were indexed under the session
			names, err := db.unitsHolding(ctx, st.s, gone, before)
			if err != nil {
				return nil, err
			}
			for _, id := range names {
				w.Delete(db.unitsOf(st.s.UserID).Doc(id))
			}
		}
		deleted = len(snaps)
		if len(w.ops) == 0 {
			return nil, nil // nothing was left to do
		}
		return w, nil
	})
	if err != nil {
		return 0, false, err
	}
	return deleted, done, nil
}

// unitsHolding names the units of session s holding text of gone, the
// messages a trim below before deletes. Their names are among gone's
// ids, unless a message from before on follows one of them (a reply
// regenerated to a question deleted now): those are read first, in one
// query per 30.
func (db *DB) unitsHolding(ctx context.Context, s *sessions.Session, gone []history.Message, before int) ([]string, error) {
	seqs := recall.Followers(s, gone, before)
	var more []history.Message
	for len(seqs) > 0 {
		n := min(len(seqs), 30)
		snaps, err := db.messagesOf(s.ID).Where("seq", "in", seqs[:n]).Documents(ctx).GetAll()
		if err != nil {
			return nil, err
		}
		for _, snap := range snaps {
			m, _, err := decodeMessage(snap)
			if err != nil {
				return nil, err
			}
			more = append(more, m)
		}
		seqs = seqs[n:]
	}
	return recall.Holding(gone, more), nil
}
