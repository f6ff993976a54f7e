package firestoredb

import (
	"context"
	"reflect"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

func (db *DB) ReadTail(ctx context.Context, sessionID string) (*sessions.Session, *history.Tail, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	st, _, err := db.readStored(db.getAllFn(ctx), sessionID)
	if err != nil {
		return nil, nil, translate(err)
	}
	if !st.exists {
		return nil, nil, sessions.NotFound(sessionID)
	}
	return st.s, st.t, nil
}

func (db *DB) UpdateTail(ctx context.Context, sessionID string, fn func(*sessions.Session, *history.Tail) error) error {
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		st, _, err := db.readStored(get, sessionID)
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(sessionID)
		}
		s, t := st.s.Clone(), st.t.Clone()
		if err := fn(s, t); err != nil {
			return nil, err
		}
		w := db.newWrites()
		if !reflect.DeepEqual(s, st.s) {
			db.writeSession(w, db.sessionRef(sessionID), st, s)
		}
		_, err = db.writeContext(w, st, s, t)
		return w, err
	})
	return err
}

func (db *DB) SaveCompaction(ctx context.Context, sessionID string, c *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	cref := db.sessionRef(sessionID).Collection(CompactionsCollection).Doc(c.ID)
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		st, extra, err := db.readStored(get, sessionID, cref)
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(sessionID)
		}
		if extra[0].Exists() {
			return nil, errs.Errorf(errs.ECONFLICT, "compaction %s exists", c.ID)
		}
		s, t := st.s.Clone(), st.t.Clone()
		if err := fn(s, t); err != nil {
			return nil, err
		}
		w := db.newWrites()
		w.Create(cref, toCompactionDoc(s.UserID, c))
		db.writeSession(w, db.sessionRef(sessionID), st, s)
		_, err = db.writeContext(w, st, s, t)
		return w, err
	})
	return err
}

// readStored reads a session and its context, with extra, in one round
// trip. A session with messages and no tail document was stored by an earlier
// version and not migrated: it is refused (errUnmigrated), not read as
// empty.
func (db *DB) readStored(get getAll, sessionID string, extra ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error) {
	st, rest, err := db.readStoredAsIs(get, sessionID, extra...)
	if err == nil && st.exists && st.tailDoc == nil && st.s.NextSeq > 0 {
		return nil, nil, unmigrated(sessionID)
	}
	return st, rest, err
}

// readStoredAsIs is readStored for the migration: a session whose
// context an earlier layout holds is read without one.
func (db *DB) readStoredAsIs(get getAll, sessionID string, extra ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error) {
	refs := append([]*firestore.DocumentRef{db.sessionRef(sessionID), db.tailRef(sessionID)}, extra...)
	snaps, err := get(refs)
	if err != nil {
		return nil, nil, err
	}
	st, err := decodeStored(snaps[0], snaps[1], sessionID)
	if err != nil {
		return nil, nil, err
	}
	return st, snaps[2:], nil
}

// stored is a session and its context as read, with what a conditional
// write of them needs.
type stored struct {
	sessionID   string
	exists      bool      // the session document
	sessionTime time.Time // its update time
	tailTime    time.Time // the tail document's update time; zero if there is none
	s           *sessions.Session
	t           *history.Tail            // the session's tail: the tail document's, with tailNext's message when it applies
	tailDoc     *tailDoc                 // as read; nil if there is none
	docTail     *history.Tail            // the tail document's own tail, which writes of the tail document plan from
	next        *tailNextDoc             // the session document's tailNext as read (see next.go)
	nextApplied bool                     // next's message is t's newest
	legacy      []*firestore.DocumentRef // documents of an earlier layout, to delete
	contextRev  string                   // the session document's contextRev as read or written ("": none)
}

// decodeStored decodes the session and tail documents. A session with
// messages but no tail document is read from an earlier layout by the caller.
func decodeStored(session, tailSnap *firestore.DocumentSnapshot, sessionID string) (*stored, error) {
	st, err := decodeStoredSession(session, sessionID)
	if err != nil || !st.exists || !tailSnap.Exists() {
		return st, err
	}
	var d tailDoc
	if err := tailSnap.DataTo(&d); err != nil {
		return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	t, err := d.tailOf(sessionID)
	if err != nil {
		return nil, err
	}
	st.setTail(&d, tailSnap.UpdateTime, t)
	return st, nil
}

// decodeStoredSession decodes the session document, as a session with no
// tail document yet.
func decodeStoredSession(session *firestore.DocumentSnapshot, sessionID string) (*stored, error) {
	st := &stored{sessionID: sessionID, t: &history.Tail{}}
	st.docTail = st.t
	if !session.Exists() {
		return st, nil
	}
	s, sd, err := decodeSessionDoc(session)
	if err != nil {
		return nil, err
	}
	st.exists, st.sessionTime, st.s, st.next, st.contextRev = true, session.UpdateTime, s, sd.TailNext, sd.ContextRev
	return st, nil
}

// setTail gives st the tail document d, written at, holding tail t, with the
// message the session document carries for it when that applies.
func (st *stored) setTail(d *tailDoc, at time.Time, t *history.Tail) {
	st.tailDoc, st.tailTime, st.docTail, st.t = d, at, t, t
	if nt, ok := nextOf(st.next, t, st.s); ok {
		st.t, st.nextApplied = nt, true
	}
}

// after returns what st becomes once a commit of w wrote session s and
// tail t as tail document d (nil: the context was not written), with the
// session's tailNext set to next (nil: as it was, or removed if the tail document
// was written).
func (st *stored) after(w *writes, res []*firestore.WriteResult, sref, wref *firestore.DocumentRef, s *sessions.Session, t *history.Tail, d *tailDoc, next *tailNextDoc) *stored {
	n := *st
	if s != nil {
		n.exists, n.s = true, s
	}
	if at, ok := w.time(res, sref); ok { // a write of the tail document writes the session document too
		n.sessionTime = at
	}
	if d != nil || w.contextRev != "" {
		n.contextRev = w.contextRev
	}
	switch {
	case d != nil:
		n.t, n.tailDoc, n.docTail, n.legacy = t, d, t, nil
		n.tailTime, _ = w.time(res, wref)
		n.nextApplied = false
		if s != nil {
			n.next = nil
		}
	case next != nil:
		n.t, n.next, n.nextApplied = t, next, true
	}
	return &n
}

// writeSession writes s in b on condition that the session document is as
// it was read (or, for a new session, that there is none), with the
// change of its user's list of deleted sessions and off-branch messages
// that it makes (a change of its active branch).
func (db *DB) writeSession(w *writes, ref *firestore.DocumentRef, st *stored, s *sessions.Session) {
	var was *sessions.Session
	if st.exists {
		was = st.s
	}
	if c := db.listChangeOf(was, s, false); c != nil {
		w.Set(c.ref, c.data, firestore.Merge(c.merge...))
	}
	if !st.exists {
		// Its user is recorded as seen alive in the commit that creates
		// it (see retention.Backstop), whatever path creates it.
		w.Create(ref, toSessionDoc(s))
		w.Set(db.accountRef(s.UserID), accountDoc{UserID: s.UserID, SeenAt: s.CreatedAt})
		return
	}
	w.Update(ref, changedUpdates(toSessionDoc(st.s), toSessionDoc(s)), firestore.LastUpdateTime(st.sessionTime))
}

// writeContext writes tail t of session s in b, changing only what differs
// from what was read (see tailDoc), on condition that the tail document is as
// read (or, without one, that there is none; an earlier layout's
// documents are then deleted).
func (db *DB) writeContext(w *writes, st *stored, s *sessions.Session, t *history.Tail) (*tailDoc, error) {
	var old *history.Tail
	summaryEnd := -1
	if st.tailDoc != nil {
		old, summaryEnd = st.docTail, compactionEnd(st.docTail.Compaction)
	}
	p, err := planTail(s.UserID, old, summaryEnd, t, s.NextSeq)
	if err != nil {
		return nil, err
	}
	if err := fenceContext(w, db.sessionRef(s.ID), st); err != nil {
		return nil, err
	}
	ref := db.tailRef(s.ID)
	if p.Doc != nil {
		w.Create(ref, p.Doc)
		for _, r := range st.legacy {
			w.Delete(r)
		}
		return p.Doc, nil
	}
	w.Update(ref, p.Updates, firestore.LastUpdateTime(st.tailTime))
	return p.apply(st.tailDoc), nil
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
			return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
		}
		out = append(out, *fromCompactionDoc(snap.Ref.ID, &d))
	}
	return out, nil
}
