package firestoredb

import (
	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/sessions"
)

// A user's deleted sessions are listed in one small document,
// chat_usage/{uid}/sessionLists/deleted (ids), changed in the same
// transaction as every change of a session's status to or from deleted
// and every purge: a turn that recalls from all of the user's sessions
// reads it with its first batched read, and so leaves deleted sessions out
// of its recall without reading the sessions it found. The list holds the
// sessions deleted and not yet purged (30 days by default): small.
const (
	SessionListsCollection = "sessionLists"
	deletedListDocID       = "deleted"
)

type deletedList struct {
	UserID string   `firestore:"userId"`
	IDs    []string `firestore:"ids"`
}

func (db *DB) deletedRef(userID string) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(SessionListsCollection).Doc(deletedListDocID)
}

// listDeleted records in tx that session s (of its user) entered or left
// the deleted status, if it did; gone is true for a purge.
func (db *DB) listDeleted(tx *firestore.Transaction, was sessions.Status, s *sessions.Session, gone bool) error {
	now := s.Status == sessions.StatusDeleted && !gone
	if (was == sessions.StatusDeleted) == now {
		return nil
	}
	var op any = firestore.ArrayUnion(s.ID)
	if !now {
		op = firestore.ArrayRemove(s.ID)
	}
	return tx.Set(db.deletedRef(s.UserID), map[string]any{"userId": s.UserID, "ids": op}, firestore.MergeAll)
}

// decodeDeleted is the list as read: empty, not nil, when there is none.
func decodeDeleted(snap *firestore.DocumentSnapshot) ([]string, error) {
	out := []string{}
	if !snap.Exists() {
		return out, nil
	}
	var d deletedList
	if err := dataTo(snap, &d); err != nil {
		return nil, err
	}
	return append(out, d.IDs...), nil
}
