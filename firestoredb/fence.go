package firestoredb

import (
	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// A session's context (its window document) is only ever written in a
// commit that changes the session document too: fenceContext sets the
// session's contextRev anew in every such commit. So while the session
// document keeps the update time an instance kept it at, the window is
// still the one it kept, and a read that only shows the context (GET
// …/context) reads the session document alone and takes the window from
// what was kept (peekStored): at 200 messages, 2 small documents instead
// of 3, one of them 83 KiB.

// fenceContext makes the commit of w, which writes the window of the
// session at sref as read in st, change the session document: it adds a
// new contextRev to the session's update, or, without one, writes it on
// condition that the session is as read. A session created in w is new
// anyway.
func fenceContext(w *writes, sref *firestore.DocumentRef, st *stored) error {
	u := firestore.Update{Path: "contextRev", Value: ids.New()}
	i, ok := w.at[sref.Path]
	switch {
	case !ok && st.exists:
		w.Update(sref, []firestore.Update{u}, firestore.LastUpdateTime(st.sessionTime))
	case !ok:
		return errs.Errorf(errs.EINTERNAL, "a context written without its session %s", sref.ID)
	case w.ops[i].kind == 'u':
		w.ops[i].updates = append(w.ops[i].updates, u)
	case w.ops[i].kind != 'c':
		return errs.Errorf(errs.EINTERNAL, "a context written beside a %c of its session %s", w.ops[i].kind, sref.ID)
	}
	return nil
}

// peekStored reads a session and its context as readStored does, in one
// round trip, but for a session this instance kept, and while the
// contexts it kept have proven current (see kept.fenceWorth), it reads
// the session document alone: when its update time is the one kept, the
// kept window is current and is used; when it is not, the window is read
// in a second round trip.
func (db *DB) peekStored(get getAll, sessionID string, extra ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error) {
	k := db.kept.latest(sessionID)
	if k == nil || !db.kept.fenceWorth() {
		st, snaps, err := db.readStored(get, sessionID, extra...)
		if err == nil && k != nil {
			db.kept.noteFence(st.exists && st.sessionTime.Equal(k.sessionTime))
		}
		return st, snaps, err
	}
	snaps, err := get(append([]*firestore.DocumentRef{db.sessionRef(sessionID)}, extra...))
	if err != nil {
		return nil, nil, err
	}
	current := snaps[0].Exists() && snaps[0].UpdateTime.Equal(k.sessionTime)
	db.kept.noteFence(current)
	if !current && snaps[0].Exists() {
		db.kept.drop(sessionID)
		return db.readStored(get, sessionID, extra...)
	}
	st, err := decodeStoredSession(snaps[0], sessionID)
	if err != nil {
		return nil, nil, err
	}
	if st.exists && k.window != nil {
		st.setWindow(k.window, k.windowTime, k.windowTail.Clone())
	}
	return st, snaps[1:], nil
}

// fenceStale is how much of the recent reads that found their session
// kept may find it stale before peekStored stops reading the session
// document alone (a stale one costs a second round trip).
const fenceStale = 0.1

// fenceWorth reports whether the contexts this instance kept have proven
// current often enough to read a kept session's document alone.
func (k *kept) fenceWorth() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stale < fenceStale
}

// noteFence counts a read that found its session kept: current, or
// written elsewhere since. The share of stale ones decays over about the
// last 20 such reads.
func (k *kept) noteFence(current bool) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	x := 1.0
	if current {
		x = 0
	}
	k.stale = 0.95*k.stale + 0.05*x
}
