package firestoredb

import (
	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// A session's context (its tail document) is only ever written in a
// commit that changes the session document too: fenceContext sets the
// session's contextRev anew in every such commit. So while the session
// document keeps the update time an instance kept it at, or (after a
// change of the session alone: a title, a setting) the contextRev it kept,
// the tail document is still the one it kept, and a read that only shows the
// context (GET …/context) reads the session document alone and takes the
// tail document from what a cache kept (ReadKnown): at 200 messages, 2 small
// documents instead of 3, one of them 83 KiB.

// fenceContext makes the commit of w, which writes the tail document of the
// session at sref as read in st, change the session document: it adds a
// new contextRev to the session's update, or, without one, writes it on
// condition that the session is as read. A session created in w is new
// anyway.
func fenceContext(w *writes, sref *firestore.DocumentRef, st *stored) error {
	rev := ids.New()
	u := firestore.Update{Path: "contextRev", Value: rev}
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
	default:
		return nil // created without one: none to know it by
	}
	w.contextRev = rev
	return nil
}
