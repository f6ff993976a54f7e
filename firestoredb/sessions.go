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
	_, err := db.createSession(ctx, s)
	return err
}

// createSession creates s and returns the update time it was created at.
func (db *DB) createSession(ctx context.Context, s *sessions.Session) (time.Time, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	// Its user is recorded as seen alive in the same commit (see
	// retention.Backstop).
	ref := db.sessionRef(s.ID)
	w := db.newWrites()
	w.Create(ref, toSessionDoc(s))
	w.Set(db.accountRef(s.UserID), accountDoc{UserID: s.UserID, SeenAt: s.CreatedAt})
	res, err := w.commit(ctx, db.client)
	if err != nil {
		return time.Time{}, translate(err)
	}
	created, _ := w.time(res, ref)
	return created, nil
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
		before := s.Clone()
		was := toSessionDoc(before)
		if err := fn(s); err != nil {
			return err
		}
		out = s
		var units []*firestore.DocumentSnapshot
		if s.Title != before.Title {
			if units, err = tx.Documents(db.sessionUnits(s.UserID, id).Select()).GetAll(); err != nil {
				return err
			}
		}
		if err := db.listInTx(tx, before, s, false); err != nil {
			return err
		}
		for _, u := range units { // they carry their session's title, for searches that read no session
			if err := tx.Update(u.Ref, []firestore.Update{{Path: "sessionTitle", Value: s.Title}}); err != nil {
				return err
			}
		}
		// The fields that changed only.
		return tx.Update(ref, changedUpdates(was, toSessionDoc(s)))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateSessions changes sessions of one user (userID) in one
// transaction, which reads them and the user's list of deleted sessions
// together and writes the list once: a sweep's soft-deletes of a user's
// sessions then write that list once a batch, not once a session (many
// transactions on one document would wait for each other, and Firestore
// sustains about one write a second to a document). fn's error for a
// session, or NotFound, is that session's, and leaves it unchanged.
func (db *DB) UpdateSessions(ctx context.Context, userID string, ids []string, fn func(*sessions.Session) error) ([]error, error) {
	refs := make([]*firestore.DocumentRef, len(ids))
	for i, id := range ids {
		refs[i] = db.sessionRef(id)
	}
	list := db.deletedRef(userID)
	out := make([]error, len(ids))
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll(append(append([]*firestore.DocumentRef{}, refs...), list))
		if err != nil {
			return err
		}
		var d deletedList
		if err := dataTo(snaps[len(ids)], &d); err != nil {
			return err
		}
		d.UserID = userID
		changed := false
		for i, snap := range snaps[:len(ids)] {
			out[i] = nil
			s, err := db.sessionIn(snap, ids[i], userID)
			if err == nil {
				err = fn(s)
			}
			if out[i] = err; err != nil {
				continue
			}
			was, _ := decodeSession(snap)
			if db.listChangeOf(was, s, false) != nil {
				d.apply(was, s)
				changed = true
			}
			if err := tx.Update(refs[i], changedUpdates(toSessionDoc(was), toSessionDoc(s))); err != nil {
				return err
			}
		}
		if !changed {
			return nil
		}
		return tx.Set(list, d)
	})
	return out, err
}

// sessionIn decodes the session snap holds if it is userID's.
func (db *DB) sessionIn(snap *firestore.DocumentSnapshot, id, userID string) (*sessions.Session, error) {
	if !snap.Exists() {
		return nil, sessions.NotFound(id)
	}
	s, err := decodeSession(snap)
	if err != nil {
		return nil, err
	}
	if s.UserID != userID {
		return nil, sessions.NotFound(id)
	}
	return s, nil
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
