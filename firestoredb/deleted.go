package firestoredb

import (
	"slices"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/sessions"
)

// What a turn that recalls from all of a user's sessions must know of
// the others is kept in one small document, chat_usage/{uid}/sessionLists/
// deleted: the ids of the user's deleted sessions (ids), and for each
// session that ever branched the messages off its active branch (off, as
// flat [from, to, from, to, …] spans: Firestore has no arrays of arrays).
// It is changed in the same commit as every change of a session's status
// to or from deleted, every purge and every change of a session's active
// branch other than a message at its end; a turn reads it with its first
// batched read, and so leaves deleted sessions and edited-away messages
// out of its recall without reading the sessions it found, the same on
// every instance. The ids hold the sessions deleted and not yet purged
// (30 days by default), the spans one pair per fork at most: small.
const (
	SessionListsCollection = "sessionLists"
	deletedListDocID       = "deleted"
)

type deletedList struct {
	UserID string           `firestore:"userId"`
	IDs    []string         `firestore:"ids"`
	Off    map[string][]int `firestore:"off,omitempty"`
}

func (db *DB) deletedRef(userID string) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(SessionListsCollection).Doc(deletedListDocID)
}

// listChange is one write of the list: a Set merging data into the fields
// merge names.
type listChange struct {
	ref   *firestore.DocumentRef
	data  map[string]any
	merge []firestore.FieldPath
}

// listChangeOf is the change of the list that writing s, read as was
// (nil: new), makes: its id added to or removed from the deleted ones,
// its off-branch spans set or dropped; nil if none. gone is true for a
// purge.
func (db *DB) listChangeOf(was, s *sessions.Session, gone bool) *listChange {
	c := &listChange{ref: db.deletedRef(s.UserID), data: map[string]any{"userId": s.UserID}, merge: []firestore.FieldPath{{"userId"}}}
	wasDeleted := was != nil && was.Status == sessions.StatusDeleted
	if now := s.Status == sessions.StatusDeleted && !gone; wasDeleted != now {
		var op any = firestore.ArrayUnion(s.ID)
		if !now {
			op = firestore.ArrayRemove(s.ID)
		}
		c.data["ids"], c.merge = op, append(c.merge, firestore.FieldPath{"ids"})
	}
	var before sessions.Path
	if was != nil {
		before = was.OffPath()
	}
	after := s.OffPath()
	if gone {
		after = nil
	}
	if !slices.Equal(before, after) {
		var v any = firestore.Delete
		if len(after) > 0 {
			flat := make([]int, 0, 2*len(after))
			for _, sp := range after {
				flat = append(flat, sp.From, sp.To)
			}
			v = flat
		}
		c.data["off"], c.merge = map[string]any{s.ID: v}, append(c.merge, firestore.FieldPath{"off", s.ID})
	}
	if len(c.merge) == 1 {
		return nil
	}
	return c
}

// listInTx makes the change of the list that writing s (read as was)
// makes, in tx.
func (db *DB) listInTx(tx *firestore.Transaction, was, s *sessions.Session, gone bool) error {
	if c := db.listChangeOf(was, s, gone); c != nil {
		return tx.Set(c.ref, c.data, firestore.Merge(c.merge...))
	}
	return nil
}

// decodeDeleted is the list as read: the deleted ids (empty, not nil,
// when there is none) and each branched session's off-branch messages.
func decodeDeleted(snap *firestore.DocumentSnapshot) ([]string, map[string]sessions.Path, error) {
	out := []string{}
	if !snap.Exists() {
		return out, nil, nil
	}
	var d deletedList
	if err := dataTo(snap, &d); err != nil {
		return nil, nil, err
	}
	var off map[string]sessions.Path
	for id, flat := range d.Off {
		if off == nil {
			off = map[string]sessions.Path{}
		}
		for i := 0; i+1 < len(flat); i += 2 {
			off[id] = append(off[id], sessions.Span{From: flat[i], To: flat[i+1]})
		}
	}
	return append(out, d.IDs...), off, nil
}

// apply makes the changes of writing s (read as was) to the list as read.
func (d *deletedList) apply(was, s *sessions.Session) {
	wasDeleted := was != nil && was.Status == sessions.StatusDeleted
	if now := s.Status == sessions.StatusDeleted; wasDeleted != now {
		d.IDs = slices.DeleteFunc(d.IDs, func(id string) bool { return id == s.ID })
		if now {
			d.IDs = append(d.IDs, s.ID)
		}
	}
	off := s.OffPath()
	switch {
	case len(off) == 0:
		delete(d.Off, s.ID)
	default:
		if d.Off == nil {
			d.Off = map[string][]int{}
		}
		flat := make([]int, 0, 2*len(off))
		for _, sp := range off {
			flat = append(flat, sp.From, sp.To)
		}
		d.Off[s.ID] = flat
	}
}
