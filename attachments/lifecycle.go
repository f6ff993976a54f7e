package attachments

import (
	"context"
	"errors"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// UnreferencedAge is how long an upload that no message names is kept.
const UnreferencedAge = 24 * time.Hour

// sweepPage is how many unreferenced attachments one query of the sweep
// reads.
const sweepPage = 200

// ForgetSessions deletes the user's attachments that belong to purged
// sessions (those their messages named first): object, then record. It is
// part of a sessions.Forget, called once a user for a page of purges,
// once the sessions are gone (no message can name them any more), and
// again if a purge is resumed: one listing of the user's attachments for
// all of them, not one a session.
func (s *Service) ForgetSessions(ctx context.Context, userID string, sessionIDs []string) error {
	gone := make(map[string]bool, len(sessionIDs))
	for _, id := range sessionIDs {
		gone[id] = true
	}
	all, err := s.Store.ListAttachments(ctx, userID)
	if err != nil {
		return err
	}
	var ids []string
	for _, a := range all {
		if gone[a.SessionID] {
			ids = append(ids, a.ID)
		}
	}
	return s.DeleteFiles(ctx, userID, ids)
}

// SweepUnreferenced deletes every upload no message named within
// UnreferencedAge of it, as of now, a page at a time until none is left
// or out says the run's time is up: its work is linear in what it
// deletes. It returns how many it deleted.
func (s *Service) SweepUnreferenced(ctx context.Context, now time.Time, out func() bool) (int, error) {
	n := 0
	for out == nil || !out() {
		page, err := s.Store.UnreferencedAttachments(ctx, now.Add(-UnreferencedAge), sweepPage)
		if err != nil {
			return n, err
		}
		for _, a := range page {
			if err := s.DeleteFiles(ctx, a.UserID, []string{a.ID}); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < sweepPage {
			break
		}
	}
	return n, nil
}

// DeleteFiles deletes the user's attachments ids (those of messages a
// trim deleted): each object, then its record; one already gone is no
// error.
func (s *Service) DeleteFiles(ctx context.Context, userID string, ids []string) error {
	var failed []error
	for _, id := range ids {
		if err := s.Blobs.Delete(ctx, Key(userID, id)); err != nil {
			failed = append(failed, err)
			continue
		}
		if _, err := s.Store.DeleteAttachment(ctx, userID, id); err != nil {
			failed = append(failed, err)
		}
	}
	if err := errors.Join(failed...); err != nil {
		return errs.Wrap(errs.EUNAVAILABLE, err, "attachments could not be deleted")
	}
	return nil
}
