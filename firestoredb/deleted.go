package firestoredb

import (
	"context"
	"slices"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// What a recall from all of a user's sessions, and a search, must know of
// the sessions they find is kept in one small document, chat_usage/{uid}/
// sessionLists/deleted: the ids of the user's deleted sessions (ids) and
// of their archived ones (archived), and for each session that ever
// branched the messages off its active branch (off, as flat [from, to,
// from, to, …] spans: Firestore has no arrays of arrays). It is changed in
// the same commit as every change of a session's status to or from
// deleted or archived, every purge and every change of a session's active
// branch other than a message at its end; a turn reads it with its first
// batched read, a search beside its queries, and so they leave deleted
// sessions and edited-away messages out, and tell archived sessions,
// without reading the sessions they found, the same on every instance.
// The ids hold the sessions deleted and not yet purged (30 days by
// default) and the archived ones (some 20 bytes each: tens of thousands
// fit), the spans one pair per fork at most. A list written before it held
// the archived ids is completed by the one-off migration (cmd/migrate).
const (
	SessionListsCollection = "sessionLists"
	deletedListDocID       = "deleted"
)

type deletedList struct {
	UserID   string           `firestore:"userId"`
	IDs      []string         `firestore:"ids"`
	Archived []string         `firestore:"archived,omitempty"`
	Off      map[string][]int `firestore:"off,omitempty"`
}

// listed are the statuses the list holds the sessions of: its field, and
// where a list read holds them.
var listed = []struct {
	field  string
	status sessions.Status
	ids    func(*deletedList) *[]string
}{
	{"ids", sessions.StatusDeleted, func(d *deletedList) *[]string { return &d.IDs }},
	{"archived", sessions.StatusArchived, func(d *deletedList) *[]string { return &d.Archived }},
}

// listInTx makes the change of the list that writing s (read as was)
// makes, in tx.
func (db *DB) listInTx(tx *firestore.Transaction, was, s *sessions.Session, gone bool) error {
	if c := db.listChangeOf(was, s, gone); c != nil {
		return tx.Set(c.ref, c.data, firestore.Merge(c.merge...))
	}
	return nil
}

// listChange is one write of the list: a Set merging data into the fields
// merge names.
type listChange struct {
	ref   *firestore.DocumentRef
	data  map[string]any
	merge []firestore.FieldPath
}

// listChangeOf is the change of the list that writing s, read as was
// (nil: new), makes: its id added to or removed from the deleted and the
// archived ones, its off-branch spans set or dropped; nil if none. gone is
// true for a purge: the session is listed as deleted until the purge has
// deleted everything under it, and its id then leaves the list.
func (db *DB) listChangeOf(was, s *sessions.Session, gone bool) *listChange {
	c := &listChange{ref: db.deletedRef(s.UserID), data: map[string]any{"userId": s.UserID}, merge: []firestore.FieldPath{{"userId"}}}
	for _, l := range listed {
		field := l.field
		before := was != nil && was.Status == l.status
		now := s.Status == l.status
		if gone { // deleted until its purge ends (see finishPurges): its units go after it
			now = l.status == sessions.StatusDeleted
		}
		if before != now {
			var op any = firestore.ArrayUnion(s.ID)
			if !now {
				op = firestore.ArrayRemove(s.ID)
			}
			c.data[field], c.merge = op, append(c.merge, firestore.FieldPath{field})
		}
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

// Visibility reads userID's list (one document).
func (db *DB) Visibility(ctx context.Context, userID string) (recall.Visibility, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.deletedRef(userID).Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return recall.Visibility{}, translate(err)
	}
	return decodeDeleted(snap)
}

// decodeDeleted is the list as read: the deleted and archived ids (empty,
// not nil, when there is none) and each branched session's off-branch
// messages.
func decodeDeleted(snap *firestore.DocumentSnapshot) (recall.Visibility, error) {
	out := recall.Visibility{Deleted: []string{}, Archived: []string{}}
	if !snap.Exists() {
		return out, nil
	}
	var d deletedList
	if err := dataTo(snap, &d); err != nil {
		return recall.Visibility{}, err
	}
	for id, flat := range d.Off {
		if out.OffPath == nil {
			out.OffPath = map[string]sessions.Path{}
		}
		for i := 0; i+1 < len(flat); i += 2 {
			out.OffPath[id] = append(out.OffPath[id], sessions.Span{From: flat[i], To: flat[i+1]})
		}
	}
	out.Deleted, out.Archived = append(out.Deleted, d.IDs...), append(out.Archived, d.Archived...)
	return out, nil
}

// apply makes the changes of writing s (read as was) to the list as read.
func (d *deletedList) apply(was, s *sessions.Session) {
	for _, l := range listed {
		ids := l.ids(d)
		before := was != nil && was.Status == l.status
		if now := s.Status == l.status; before != now {
			*ids = slices.DeleteFunc(*ids, func(id string) bool { return id == s.ID })
			if now {
				*ids = append(*ids, s.ID)
			}
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
