package sessions

import (
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Message retention deletes a session's messages once they are older than
// a period: the policy's (Policy.Messages, off by default) or the
// session's own (MessageRetentionDays), whichever is shorter. The session
// keeps what the sweep needs to find it without reading its messages:
// when its oldest stored message was written (HistoryStartAt) and, with a
// period of its own, when that message falls due (HistoryExpiresAt).
// HistoryFrom says from which seq its history is still stored.

// NoteAppend records that messages are being stored at now: the first of
// an empty session starts its history. A session stored before history
// starts were kept gets its creation time, a moment no message precedes,
// so that the sweep looks at it once and dates it exactly.
func (s *Session) NoteAppend(now time.Time) {
	switch {
	case s.MessageCount == 0:
		s.Bookkeeping.HistoryStartAt = now
	case s.Bookkeeping.HistoryStartAt.IsZero():
		s.Bookkeeping.HistoryStartAt = s.CreatedAt
	}
}

// MessageRetention is the period after which s's messages are deleted
// under p: the shorter of the policy's and the session's own; 0 if
// neither is set.
func (s *Session) MessageRetention(p Policy) time.Duration {
	period := p.Messages
	if own := time.Duration(s.MessageRetentionDays) * Day; own > 0 && (period == 0 || own < period) {
		period = own
	}
	return period
}

// HistoryExpiresAt is when s's oldest stored message falls due under the
// session's own period; zero without one, or without messages. (Due under
// the policy's period is found from HistoryStartAt, as that period may
// change between runs.)
func (s *Session) HistoryExpiresAt() time.Time {
	if s.MessageRetentionDays <= 0 || s.Bookkeeping.HistoryStartAt.IsZero() {
		return time.Time{}
	}
	return s.Bookkeeping.HistoryStartAt.Add(time.Duration(s.MessageRetentionDays) * Day)
}

// CheckMessageRetentionDays accepts a session's own message retention: 1
// to MaxRetentionDays days, or 0 for none (the policy's applies).
func CheckMessageRetentionDays(n int) error {
	if n < 0 || n > MaxRetentionDays {
		return errs.Errorf(errs.EINVALID, "messageRetentionDays must be between 1 and %d (0: follow the service's setting)", MaxRetentionDays)
	}
	return nil
}
