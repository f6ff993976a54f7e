package firestoredb

import (
	"context"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Subcollections of a session besides its messages.
const (
	ContextCollection     = "context"
	CompactionsCollection = "compactions"
	tailDocID             = "tail"
)

func (db *DB) tailRef(sessionID string) *firestore.DocumentRef {
	return db.sessionRef(sessionID).Collection(ContextCollection).Doc(tailDocID)
}

// decodeContext reads a session and its tail from their snapshots.
func decodeContext(ssnap, tsnap *firestore.DocumentSnapshot, sessionID string) (*sessions.Session, *history.Tail, error) {
	if !ssnap.Exists() {
		return nil, nil, sessions.NotFound(sessionID)
	}
	s, err := decodeSession(ssnap)
	if err != nil {
		return nil, nil, err
	}
	t, err := decodeTail(tsnap, sessionID)
	if err != nil {
		return nil, nil, err
	}
	return s, t, nil
}

// ReadContext reads the session and its tail in one round trip.
func (db *DB) ReadContext(ctx context.Context, sessionID string) (*sessions.Session, *history.Tail, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.client.GetAll(ctx, []*firestore.DocumentRef{db.sessionRef(sessionID), db.tailRef(sessionID)})
	if err != nil {
		return nil, nil, translate(err)
	}
	return decodeContext(snaps[0], snaps[1], sessionID)
}

func (db *DB) UpdateTail(ctx context.Context, sessionID string, fn func(*sessions.Session, *history.Tail) error) error {
	sref, tref := db.sessionRef(sessionID), db.tailRef(sessionID)
	return db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{sref, tref})
		if err != nil {
			return err
		}
		s, t, err := decodeContext(snaps[0], snaps[1], sessionID)
		if err != nil {
			return err
		}
		if err := fn(s, t); err != nil {
			return err
		}
		return tx.Set(tref, toTailDoc(s.UserID, t))
	})
}

func (db *DB) SaveCompaction(ctx context.Context, sessionID string, c *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	sref, tref := db.sessionRef(sessionID), db.tailRef(sessionID)
	cref := sref.Collection(CompactionsCollection).Doc(c.ID)
	return db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{sref, tref, cref})
		if err != nil {
			return err
		}
		s, t, err := decodeContext(snaps[0], snaps[1], sessionID)
		if err != nil {
			return err
		}
		if snaps[2].Exists() {
			return sessions.Errorf(sessions.ECONFLICT, "compaction %s exists", c.ID)
		}
		if err := fn(s, t); err != nil {
			return err
		}
		if err := tx.Create(cref, toCompactionDoc(s.UserID, c)); err != nil {
			return err
		}
		if err := tx.Set(tref, toTailDoc(s.UserID, t)); err != nil {
			return err
		}
		return tx.Set(sref, toSessionDoc(s))
	})
}

func (db *DB) ListCompactions(ctx context.Context, sessionID string) ([]history.Compaction, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.sessionRef(sessionID).Collection(CompactionsCollection).OrderBy("endSeq", firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]history.Compaction, 0, len(snaps))
	for _, snap := range snaps {
		var d compactionDoc
		if err := snap.DataTo(&d); err != nil {
			return nil, sessions.Wrap(sessions.EINTERNAL, err, "internal error")
		}
		out = append(out, *fromCompactionDoc(snap.Ref.ID, &d))
	}
	return out, nil
}
