package firestoredb

import (
	"context"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Append reads the session, its context and, for a keyed batch, the
// batch's first message by its deterministic id, in one round trip; then
// writes the messages, the session and what changed of its context in one
// commit, on condition that none of it changed meanwhile (else it reads
// again and replans). An unkeyed batch's ids are chosen once, before the
// first attempt, and its first message is read with the rest after a
// commit whose answer was lost: found, the batch landed and is not
// written twice.
func (db *DB) Append(ctx context.Context, sessionID, key string, plan history.Plan) (*history.Appended, error) {
	msgs := db.messagesOf(sessionID)
	var out, written *history.Appended
	var names []string // an unkeyed batch's ids, kept across attempts
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		var extra []*firestore.DocumentRef
		switch {
		case key != "":
			extra = append(extra, msgs.Doc(history.KeyedMessageID(key, 0)))
		case written != nil:
			extra = append(extra, msgs.Doc(names[0]))
		}
		st, snaps, err := db.readStored(get, sessionID, extra...)
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(sessionID)
		}
		if key == "" && written != nil && snaps[0].Exists() {
			out = written // the last commit landed
			return nil, nil
		}
		var stored []history.Message
		if key != "" && snaps[0].Exists() {
			if stored, err = readBatch(get, msgs, key, snaps[0]); err != nil {
				return nil, err
			}
		}
		s, t := st.s.Clone(), st.t.Clone()
		write, err := plan(s, t, stored)
		if err != nil {
			return nil, err
		}
		if len(write) == 0 {
			out = &history.Appended{Session: st.s, Tail: st.t, Messages: stored, Replayed: true}
			return nil, nil
		}
		if key == "" {
			names = nameBatch(names, write, msgs)
		}
		w := db.newWrites()
		db.createMessages(w, sessionID, key, write)
		t.SetIDs(write)
		db.writeSession(w, db.sessionRef(sessionID), st, s)
		if _, err := db.writeContext(w, st, s, t); err != nil {
			return nil, err
		}
		out = &history.Appended{Session: s, Tail: t, Messages: write}
		written = out
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// createMessages adds the creation of msgs to b, naming those without an
// id: by the batch's key (so a retry finds them), else at random.
func (db *DB) createMessages(w *writes, sessionID, key string, msgs []history.Message) {
	coll := db.messagesOf(sessionID)
	batch := 0
	if key != "" {
		batch = len(msgs)
	}
	for i := range msgs {
		ref := coll.NewDoc()
		switch {
		case msgs[i].ID != "":
			ref = coll.Doc(msgs[i].ID)
		case key != "":
			ref = coll.Doc(history.KeyedMessageID(key, i))
		}
		msgs[i].ID = ref.ID
		w.Create(ref, toMessageDoc(&msgs[i], batch))
	}
}

// getAllFn reads documents with the client, in one round trip.
func (db *DB) getAllFn(ctx context.Context) getAll {
	return func(refs []*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
		return db.client.GetAll(ctx, refs)
	}
}

// readBatch reads the rest of the batch stored under key, given its first
// message, with getAll (a transaction's or the client's).
func readBatch(getAll func([]*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error), msgs *firestore.CollectionRef, key string, first *firestore.DocumentSnapshot) ([]history.Message, error) {
	m, size, err := decodeMessage(first)
	if err != nil {
		return nil, err
	}
	stored := []history.Message{m}
	if size <= 1 {
		return stored, nil
	}
	refs := make([]*firestore.DocumentRef, 0, size-1)
	for i := 1; i < size; i++ {
		refs = append(refs, msgs.Doc(history.KeyedMessageID(key, i)))
	}
	snaps, err := getAll(refs)
	if err != nil {
		return nil, err
	}
	for _, snap := range snaps {
		if !snap.Exists() {
			return nil, errs.Errorf(errs.EINTERNAL, "batch %q is incomplete", key)
		}
		m, _, err := decodeMessage(snap)
		if err != nil {
			return nil, err
		}
		stored = append(stored, m)
	}
	return stored, nil
}

func (db *DB) ListMessages(ctx context.Context, q history.ListQuery) ([]history.Message, error) {
	dir := firestore.Asc
	if q.Desc {
		dir = firestore.Desc
	}
	query := db.messagesOf(q.SessionID).Query
	if q.Within != nil {
		query = query.Where("seq", ">=", q.Within.From).Where("seq", "<=", q.Within.To)
	}
	query = query.OrderBy("seq", dir).Limit(q.Limit)
	if q.AfterSeq != nil {
		query = query.StartAfter(*q.AfterSeq)
	}
	return db.readMessages(ctx, query)
}

func (db *DB) MessageRange(ctx context.Context, sessionID string, from, to int) ([]history.Message, error) {
	query := db.messagesOf(sessionID).Where("seq", ">=", from).Where("seq", "<=", to).OrderBy("seq", firestore.Asc)
	return db.readMessages(ctx, query)
}

func (db *DB) readMessages(ctx context.Context, q firestore.Query) ([]history.Message, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]history.Message, 0, len(snaps))
	for _, snap := range snaps {
		m, _, err := decodeMessage(snap)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
