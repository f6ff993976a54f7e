package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

// draft is a session's streaming reply, as its followers see it.
type draft struct {
	userID, replyID, text string
	stop                  bool
	version               int64
}

// SaveDraft stores d's text if the session's draft still follows d's reply.
func (db *DB) SaveDraft(_ context.Context, d *chat.Draft) (bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	cur, ok := db.drafts[d.SessionID]
	if !ok || cur.replyID != d.ReplyID {
		return false, chat.ErrDraftTaken
	}
	if cur.stop {
		return true, nil
	}
	db.draftSeq++
	cur.text, cur.version = d.Text, db.draftSeq
	d.Version = cur.version
	return false, nil
}

// RequestStop marks the session's draft to stop if it follows replyID.
func (db *DB) RequestStop(_ context.Context, userID, sessionID, replyID string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	cur, ok := db.drafts[sessionID]
	if !ok || cur.userID != userID || cur.replyID != replyID {
		return errs.Errorf(errs.ENOTFOUND, "no reply %s is in progress", replyID)
	}
	cur.stop = true
	db.draftSeq++
	cur.version = db.draftSeq
	return nil
}
