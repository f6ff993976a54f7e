package firestoredb

import (
	"context"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Append reads the session, its tail and, for a keyed batch, the batch's
// first message by its deterministic id, in one round trip; then writes the
// messages, the session and the tail in the same transaction.
func (db *DB) Append(ctx context.Context, sessionID, key string, plan history.Plan) (*history.Appended, error) {
	sref, tref := db.sessionRef(sessionID), db.tailRef(sessionID)
	msgs := db.messagesOf(sessionID)
	var out *history.Appended
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		refs := []*firestore.DocumentRef{sref, tref}
		if key != "" {
			refs = append(refs, msgs.Doc(history.KeyDocID(key, 0)))
		}
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		s, t, err := decodeContext(snaps[0], snaps[1], sessionID)
		if err != nil {
			return err
		}
		var stored []history.Message
		if key != "" && snaps[2].Exists() {
			if stored, err = readBatch(tx.GetAll, msgs, key, snaps[2]); err != nil {
				return err
			}
		}
		before := s.Clone()
		write, err := plan(s, t, stored)
		if err != nil {
			return err
		}
		if len(write) == 0 {
			out = &history.Appended{Session: before, Tail: t, Messages: stored, Replayed: true}
			return nil
		}
		batch := 0
		if key != "" {
			batch = len(write)
		}
		for i := range write {
			ref := msgs.NewDoc()
			if key != "" {
				ref = msgs.Doc(history.KeyDocID(key, i))
			}
			write[i].ID = ref.ID
			if err := tx.Create(ref, toMessageDoc(&write[i], batch)); err != nil {
				return err
			}
		}
		t.SetIDs(write)
		out = &history.Appended{Session: s, Tail: t, Messages: write}
		if err := tx.Set(tref, toTailDoc(s.UserID, t)); err != nil {
			return err
		}
		return tx.Set(sref, toSessionDoc(s))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FindBatch reads the batch stored under key by its deterministic ids.
func (db *DB) FindBatch(ctx context.Context, sessionID, key string) ([]history.Message, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	msgs := db.messagesOf(sessionID)
	snap, err := msgs.Doc(history.KeyDocID(key, 0)).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	stored, err := readBatch(func(refs []*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error) {
		return db.client.GetAll(ctx, refs)
	}, msgs, key, snap)
	return stored, translate(err)
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
		refs = append(refs, msgs.Doc(history.KeyDocID(key, i)))
	}
	snaps, err := getAll(refs)
	if err != nil {
		return nil, err
	}
	for _, snap := range snaps {
		if !snap.Exists() {
			return nil, sessions.Errorf(sessions.EINTERNAL, "batch %q is incomplete", key)
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
	query := db.messagesOf(q.SessionID).OrderBy("seq", dir).Limit(q.Limit)
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
