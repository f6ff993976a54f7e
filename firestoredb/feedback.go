package firestoredb

import (
	"context"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// UpdateFeedback reads the session and the message in a transaction and
// updates the message's feedback field and the session's counts.
func (db *DB) UpdateFeedback(ctx context.Context, sessionID, messageID string, fn func(*sessions.Session, *history.Message) (bool, error)) (*history.Message, error) {
	sref, mref := db.sessionRef(sessionID), db.messagesOf(sessionID).Doc(messageID)
	var out *history.Message
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{sref, mref})
		if err != nil {
			return err
		}
		if !snaps[0].Exists() {
			return sessions.NotFound(sessionID)
		}
		s, err := decodeSession(snaps[0])
		if err != nil {
			return err
		}
		var m *history.Message
		if snaps[1].Exists() {
			got, _, err := decodeMessage(snaps[1])
			if err != nil {
				return err
			}
			m = &got
		}
		changed, err := fn(s, m)
		if err != nil || !changed {
			out = m
			return err
		}
		out = m
		var fb any = firestore.Delete
		if m.Feedback != nil {
			fb = m.Feedback
		}
		if err := tx.Update(mref, []firestore.Update{{Path: "feedback", Value: fb}}); err != nil {
			return err
		}
		return tx.Update(sref, []firestore.Update{{Path: "feedback", Value: s.Feedback}})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
