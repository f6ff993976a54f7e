package history

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Rating is a user's verdict on a reply.
type Rating string

const (
	RatingUp   Rating = "up"
	RatingDown Rating = "down"
)

// MaxFeedbackComment bounds a feedback's comment, in characters.
const MaxFeedbackComment = 1000

// Feedback is a user's rating of an assistant message, kept on it.
type Feedback struct {
	Rating  Rating    `json:"rating" firestore:"rating"`
	Comment string    `json:"comment,omitempty" firestore:"comment,omitempty"`
	At      time.Time `json:"at" firestore:"at"`
}

// FeedbackStore stores feedback on messages.
type FeedbackStore interface {
	// UpdateFeedback reads session sessionID (ENOTFOUND if missing) and
	// its message messageID, calls fn (with a nil message if it is
	// missing), and writes the message's feedback and the session's
	// feedback counts as fn left them, atomically; if fn reports no
	// change, nothing is written.
	UpdateFeedback(ctx context.Context, sessionID, messageID string, fn func(s *sessions.Session, m *Message) (changed bool, err error)) (*Message, error)
}

// SetFeedback rates (or, with fb nil, unrates) message messageID of
// userID's session sessionID now (see the function SetFeedback).
func (svc *Service) SetFeedback(ctx context.Context, userID, sessionID, messageID string, fb *Feedback) (*Message, error) {
	return SetFeedback(ctx, svc.Feedback, clock.Stored(svc.Now), userID, sessionID, messageID, fb)
}

// SetFeedback rates message messageID of userID's session sessionID (fb
// nil withdraws the rating): only replies (assistant messages) are rated,
// the same rating again changes nothing, and the session counts its
// ratings.
func SetFeedback(ctx context.Context, store FeedbackStore, now time.Time, userID, sessionID, messageID string, fb *Feedback) (*Message, error) {
	if err := sessions.CheckID(sessionID); err != nil {
		return nil, err
	}
	if messageID == "" || len(messageID) > 128 {
		return nil, errs.Errorf(errs.EINVALID, "messageId: not a message id")
	}
	if fb != nil {
		fb.Comment = strings.TrimSpace(fb.Comment)
		switch {
		case fb.Rating != RatingUp && fb.Rating != RatingDown:
			return nil, errs.Errorf(errs.EINVALID, `rating: "up" or "down"`)
		case utf8.RuneCountInString(fb.Comment) > MaxFeedbackComment:
			return nil, errs.Errorf(errs.EINVALID, "comment: at most %d characters", MaxFeedbackComment)
		}
		fb.At = now
	}
	return store.UpdateFeedback(ctx, sessionID, messageID, func(s *sessions.Session, m *Message) (bool, error) {
		if err := s.CheckOwner(userID); err != nil {
			return false, err
		}
		if m == nil {
			return false, MessageNotFound(messageID)
		}
		if m.Role != RoleAssistant {
			return false, errs.Errorf(errs.EINVALID, "only replies (assistant messages) are rated")
		}
		old := m.Feedback
		if (old == nil && fb == nil) || (old != nil && fb != nil && old.Rating == fb.Rating && old.Comment == fb.Comment) {
			return false, nil // as it is: idempotent
		}
		if old != nil {
			s.Feedback.Count(string(old.Rating), -1)
		}
		if fb != nil {
			s.Feedback.Count(string(fb.Rating), 1)
			c := *fb
			m.Feedback = &c
		} else {
			m.Feedback = nil
		}
		return true, nil
	})
}

// MessageNotFound is the error for a message its session does not hold.
func MessageNotFound(id string) *errs.Error {
	return errs.Errorf(errs.ENOTFOUND, "message %q not found", id)
}
