package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

// draftDoc is chat_sessions/{sid}/context/draft: the partial text of the
// session's streaming reply, which clients follow with a listener.
type draftDoc struct {
	UserID        string    `firestore:"userId"`
	ReplyID       string    `firestore:"replyId"`
	UserMessageID string    `firestore:"userMessageId"`
	Text          string    `firestore:"text"`
	StopRequested bool      `firestore:"stopRequested"`
	UpdatedAt     time.Time `firestore:"updatedAt"`
}

// SaveDraft writes the partial text of the session's streaming reply, on
// condition that the draft is as this turn last wrote it. If it is not, it
// reads it: a stop was requested, or another turn took the draft over
// (chat.ErrDraftTaken).
func (db *DB) SaveDraft(ctx context.Context, d *chat.Draft) (bool, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	ref := db.draftRef(d.SessionID)
	for range 3 {
		if t, ok := d.Version.(time.Time); ok && !t.IsZero() {
			res, err := ref.Update(ctx, []firestore.Update{{Path: "text", Value: d.Text}, {Path: "updatedAt", Value: time.Now().UTC()}},
				firestore.LastUpdateTime(t))
			if err == nil {
				d.Version = res.UpdateTime
				return false, nil
			}
			if !stale(err) {
				return false, translate(err)
			}
		}
		snap, err := ref.Get(ctx)
		if isNotFound(err) {
			return false, chat.ErrDraftTaken
		}
		if err != nil {
			return false, translate(err)
		}
		var cur draftDoc
		if err := dataTo(snap, &cur); err != nil {
			return false, err
		}
		if cur.ReplyID != d.ReplyID {
			return false, chat.ErrDraftTaken
		}
		if cur.StopRequested {
			return true, nil
		}
		d.Version = snap.UpdateTime
	}
	return false, errs.Errorf(errs.EUNAVAILABLE, "the draft keeps changing")
}

// RequestStop marks the session's draft to be stopped if it follows
// replyID and belongs to userID.
func (db *DB) RequestStop(ctx context.Context, userID, sessionID, replyID string) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	ref := db.draftRef(sessionID)
	for range 5 {
		snap, err := ref.Get(ctx)
		if isNotFound(err) {
			return errs.Errorf(errs.ENOTFOUND, "no reply %s is in progress", replyID)
		}
		if err != nil {
			return translate(err)
		}
		var d draftDoc
		if err := dataTo(snap, &d); err != nil {
			return err
		}
		if d.UserID != userID || d.ReplyID != replyID {
			return errs.Errorf(errs.ENOTFOUND, "no reply %s is in progress", replyID)
		}
		_, err = ref.Update(ctx, []firestore.Update{{Path: "stopRequested", Value: true}}, firestore.LastUpdateTime(snap.UpdateTime))
		if err == nil || !stale(err) {
			return translate(err)
		}
	}
	return errs.Errorf(errs.EUNAVAILABLE, "the reply kept changing; try again")
}
