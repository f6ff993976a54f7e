package sessions

// Whether a request may use a session now: its owner, its status, and
// the answering lease (see Answering) that holds one reply at a time.

import (
	"errors"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Claim is a request to answer a message of session SessionID: the user
// asking, whether the request may start the session (New), the key and
// operation it runs under (Key "" for none), the token that names the
// request, and when it asks.
type Claim struct {
	SessionID, UserID, Key, Token string
	New                           bool
	Op                            Operation
	At                            time.Time
}

// ClaimCheck is what a session says of a Claim, decided in one call. The
// claimer applies it in its own order among its own checks (of what the
// key stored).
type ClaimCheck struct {
	// Access refuses a claim on a session that is not there (unless the
	// claim may start it) or that another user owns: NotFound, alike.
	Access error
	// Own is the lease held under the claim's token: its commit landed
	// before, and its answer was lost on the way.
	Own *Answering
	// Reused: the lease in force holds the claim's key for another
	// operation.
	Reused bool
	// Busy refuses a claim while a lease is in force: the request under
	// the claim's key is still in progress, or another message is being
	// answered (an InProgress whose cause is ErrBusy).
	Busy error
	// Writable refuses new messages for a session that is not active.
	Writable error
}

// CheckClaim tells what s, the session as read (nil: there is none), says
// of c. Nothing refuses a claim that starts the session.
func CheckClaim(s *Session, c Claim) ClaimCheck {
	var out ClaimCheck
	if s == nil {
		if !c.New {
			out.Access = NotFound(c.SessionID)
		}
		return out
	}
	if a := s.Bookkeeping.Answering; a != nil && a.Token == c.Token {
		out.Own = a
	}
	if a := s.AnsweringAt(c.At); a != nil && c.Key != "" && a.Key == c.Key {
		out.Reused = a.Op != c.Op
		out.Busy = InProgress(c.At, a, "the request with clientMessageId %q is in progress; retry to get its reply", c.Key)
	} else {
		out.Busy = s.CheckNotAnswering(c.At)
	}
	out.Access, out.Writable = s.CheckOwner(c.UserID), s.CheckWritable()
	return out
}

// CheckOwner returns errs.ENOTFOUND unless userID owns s.
func (s *Session) CheckOwner(userID string) error {
	if userID == "" || s.UserID != userID {
		return NotFound(s.ID)
	}
	return nil
}

// NotFound is the error for a session that does not exist and, identically,
// for another user's session: a caller cannot tell the two apart.
func NotFound(id string) *errs.Error {
	return errs.Errorf(errs.ENOTFOUND, "session %q not found", id)
}

// CheckWritable refuses new messages for a session that is not active.
func (s *Session) CheckWritable() error {
	if s.Status != StatusActive {
		return errs.Errorf(errs.EPRECONDITION, "session is %s: restore it before adding messages", s.Status)
	}
	return nil
}

// ErrBusy is the cause of the conflict of a write that would continue a
// session while one of its messages is being answered: a writer may wait
// for it to end and try again.
var ErrBusy = errors.New("sessions: a message of the session is being answered")

// CheckNotAnswering refuses a write that would continue the session while
// one of its messages is being answered: an InProgress conflict whose cause
// is ErrBusy.
func (s *Session) CheckNotAnswering(now time.Time) error {
	if a := s.AnsweringAt(now); a != nil {
		e := InProgress(now, a, "a reply in this session is being written; retry once it is stored")
		e.Err = ErrBusy
		return e
	}
	return nil
}

// AnsweringAt returns the lease in force at now, or nil if there is none
// (never taken, given back, or run out).
func (s *Session) AnsweringAt(now time.Time) *Answering {
	if s == nil || s.Bookkeeping.Answering == nil || !s.Bookkeeping.Answering.Until.After(now) {
		return nil
	}
	return s.Bookkeeping.Answering
}

// MaxRetryAfter caps the wait a busy answer asks for: a retry soon after
// learns more than a long sleep.
const MaxRetryAfter = 5 * time.Second

// InProgress is the conflict of a request that must wait for the lease a
// to end: retryable, with a Retry-After of at most MaxRetryAfter.
func InProgress(now time.Time, a *Answering, format string, args ...any) *errs.Error {
	e := errs.Errorf(errs.ECONFLICT, format, args...)
	e.RetryAfter = max(min(a.Until.Sub(now), MaxRetryAfter).Round(time.Second), time.Second)
	return e
}
