package sessions

import (
	"errors"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Answering is the turn that holds the right to answer a message of the
// session: at most one at a time. It is set in the commit that claims the
// turn and cleared in the commit that stores its reply (or gives the turn
// back when it fails), so it costs no write of its own: the session is
// written in both. While it holds, no other turn, regeneration, edit or
// append starts in the session (ECONFLICT with a Retry-After): the tree
// stays whole (a reply's parent is always its question) and a retry of the
// same request learns that it is still in progress. A lease whose holder
// died runs out at Until and is then taken over.
type Answering struct {
	Seq     int       `firestore:"seq"`     // the message being answered
	ReplyID string    `firestore:"replyId"` // the id its reply will have
	Key     string    `firestore:"key,omitempty"`
	Op      Operation `firestore:"op"`
	// Token names the request holding the lease, so that a request whose
	// commit's answer was lost can tell its own claim from another's.
	Token string    `firestore:"token"`
	Until time.Time `firestore:"until"`
}

// Operation is what a keyed request does: one key names one operation on
// one session, and reused for another, it is refused.
type Operation struct {
	Kind   OpKind `firestore:"kind"`
	Target string `firestore:"target,omitempty"` // the message regenerated or edited; tool results' digest
}

// OpKind is the kind of a keyed request.
type OpKind string

const (
	OpTurn       OpKind = "turn"
	OpRegenerate OpKind = "regenerate"
	OpEdit       OpKind = "edit"
	OpTools      OpKind = "toolResults" // tool results sent to continue a turn
)

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
