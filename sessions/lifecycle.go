package sessions

import (
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Action is something that moves a session through its lifecycle.
type Action string

const (
	ActionArchive Action = "archive"
	ActionRestore Action = "restore"
	ActionDelete  Action = "delete" // soft: recoverable until purged
	ActionPurge   Action = "purge"  // hard: the session and all under it are gone
)

// lifecycle is the one table of allowed transitions: action → from → to.
// Anything not in it is refused with a *TransitionError.
var lifecycle = map[Action]map[Status]Status{
	ActionArchive: {StatusActive: StatusArchived},
	ActionRestore: {StatusArchived: StatusActive, StatusDeleted: StatusActive},
	ActionDelete:  {StatusActive: StatusDeleted, StatusArchived: StatusDeleted},
	ActionPurge:   {StatusDeleted: StatusPurged},
}

// TransitionError is the typed error for a transition the lifecycle table
// does not allow. Its code is errs.EPRECONDITION.
type TransitionError struct {
	Action Action
	From   Status
}

// Apply moves s through action at now, setting the timestamps that go with
// the new status and the moment retention will next act on it. Purge only
// checks that it is allowed: the store removes the session.
func (s *Session) Apply(action Action, now time.Time, p Policy) error {
	to, err := Next(s.Status, action)
	if err != nil {
		return err
	}
	if to == StatusPurged {
		return nil
	}
	s.Status = to
	s.UpdatedAt = now
	switch to {
	case StatusArchived:
		s.ArchivedAt = &now
	case StatusDeleted:
		s.DeletedAt = &now
	case StatusActive: // a restore is activity
		s.ArchivedAt, s.DeletedAt = nil, nil
		s.LastActivityAt = now
	}
	s.ExpiresAt = p.ExpiresAt(s)
	return nil
}

// Next returns the status action leads to from status from.
func Next(from Status, action Action) (Status, error) {
	if to, ok := lifecycle[action][from]; ok {
		return to, nil
	}
	te := &TransitionError{Action: action, From: from}
	return "", &errs.Error{Code: errs.EPRECONDITION, Message: te.Error(), Err: te}
}

func (e *TransitionError) Error() string {
	return "cannot " + string(e.Action) + " a session that is " + string(e.From)
}

// Touch records activity (new messages) at now and moves expiry forward.
func (s *Session) Touch(now time.Time, p Policy) {
	s.UpdatedAt, s.LastActivityAt = now, now
	s.ExpiresAt = p.ExpiresAt(s)
}
