package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/sessions"
)

func (db *DB) CreateSession(ctx context.Context, s *sessions.Session) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.sessionRef(s.ID).Create(ctx, toSessionDoc(s))
	return translate(err)
}

func (db *DB) GetSession(ctx context.Context, id string) (*sessions.Session, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.sessionRef(id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return nil, sessions.NotFound(id)
	}
	if err != nil {
		return nil, translate(err)
	}
	return decodeSession(snap)
}

func (db *DB) UpdateSession(ctx context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error) {
	ref := db.sessionRef(id)
	var out *sessions.Session
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := getSession(tx, ref)
		if err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
		out = s
		return tx.Set(ref, toSessionDoc(s))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// getSession reads a session inside a transaction.
func getSession(tx *firestore.Transaction, ref *firestore.DocumentRef) (*sessions.Session, error) {
	snap, err := tx.Get(ref)
	if status.Code(err) == codes.NotFound {
		return nil, sessions.NotFound(ref.ID)
	}
	if err != nil {
		return nil, err
	}
	return decodeSession(snap)
}

// ListSessions needs the composite index (userId, status, updatedAt desc)
// declared in firestore.indexes.json.
func (db *DB) ListSessions(ctx context.Context, q sessions.ListQuery) ([]*sessions.Session, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	query := db.client.Collection(SessionsCollection).
		Where("userId", "==", q.UserID).
		Where("status", "==", string(q.Status)).
		OrderBy("updatedAt", firestore.Desc).
		OrderBy(firestore.DocumentID, firestore.Desc).
		Limit(q.Limit)
	if q.After != nil {
		query = query.StartAfter(q.After.UpdatedAt, q.After.ID)
	}
	return readSessions(ctx, query)
}

// readSessions runs a query of sessions.
func readSessions(ctx context.Context, q firestore.Query) ([]*sessions.Session, error) {
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*sessions.Session, 0, len(snaps))
	for _, snap := range snaps {
		s, err := decodeSession(snap)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

type purgeMarker struct {
	UserID    string    `firestore:"userId"`
	CreatedAt time.Time `firestore:"createdAt"`
}

// PurgeSession deletes the session document in a transaction that first
// runs check, and leaves a marker in the same transaction. From then on no
// append can land (appends read the session), nothing derived from it can
// be saved (long-term memory's saves read it too), and the session cannot
// be restored. Then it deletes every document under the session, calls
// forget, and last deletes the marker: a purge cut off half-way is
// finished by ResumePurge.
func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	ref := db.sessionRef(id)
	marker := db.client.Collection(PurgesCollection).Doc(id)
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := getSession(tx, ref)
		if err != nil {
			return err
		}
		if err := check(s); err != nil {
			return err
		}
		if err := tx.Set(marker, purgeMarker{UserID: s.UserID, CreatedAt: time.Now().UTC()}); err != nil {
			return err
		}
		return tx.Delete(ref)
	})
	if err != nil {
		return 0, err
	}
	n, err := db.ResumePurge(ctx, id, forget)
	return n + 1, err
}

// ResumePurge deletes everything still under a session whose document is
// gone, calls forget with the owner the marker names, then deletes the
// purge marker. It is idempotent and returns how many documents it deleted.
func (db *DB) ResumePurge(ctx context.Context, id string, forget sessions.Forget) (int, error) {
	n, err := db.deleteUnder(ctx, db.sessionRef(id))
	if err != nil {
		return n, err
	}
	marker := db.client.Collection(PurgesCollection).Doc(id)
	octx, cancel := db.op(ctx)
	defer cancel()
	if forget != nil {
		snap, err := marker.Get(octx)
		if err != nil && status.Code(err) != codes.NotFound {
			return n, translate(err)
		}
		if err == nil {
			var m purgeMarker
			if err := snap.DataTo(&m); err != nil {
				return n, sessions.Wrap(sessions.EINTERNAL, err, "internal error")
			}
			if err := forget(ctx, m.UserID, id); err != nil {
				return n, err
			}
		}
	}
	if _, err := marker.Delete(octx); err != nil {
		return n, translate(err)
	}
	return n, nil
}

// purgePage is how many documents are listed and deleted at a time.
const purgePage = 300

// deleteUnder deletes every document in every subcollection of ref with a
// BulkWriter (the Go client has no recursive delete). Our documents under a
// session have no subcollections of their own, so one level is everything.
func (db *DB) deleteUnder(ctx context.Context, ref *firestore.DocumentRef) (int, error) {
	octx, cancel := db.op(ctx)
	cols, err := ref.Collections(octx).GetAll()
	cancel()
	if err != nil {
		return 0, translate(err)
	}
	total := 0
	for _, col := range cols {
		n, err := db.deleteQuery(ctx, col.Query)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
