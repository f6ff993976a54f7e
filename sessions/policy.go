package sessions

import "time"

// Day is the unit retention is configured in.
const Day = 24 * time.Hour

// Policy says how long a session stays in each status before retention acts
// on it. The sweep (package retention) carries the actions out; this package
// keeps each session's ExpiresAt equal to the moment the next one is due.
type Policy struct {
	ActiveIdle time.Duration // no activity for this long → soft-deleted
	Archived   time.Duration // this long after archiving → soft-deleted
	Deleted    time.Duration // this long after deletion → purged
	// Messages, if set, is how long a message is kept, whatever its
	// session's status (see Session.MessageRetention); 0 keeps messages
	// as long as their session.
	Messages time.Duration
}

// DefaultPolicy is 30 days idle, 90 days archived, 30 days deleted.
func DefaultPolicy() Policy {
	return Policy{ActiveIdle: 30 * Day, Archived: 90 * Day, Deleted: 30 * Day}
}

// ExpiresAt is the moment retention next acts on s. A session's own
// RetentionDays, set at creation, replaces the idle period of the policy.
func (p Policy) ExpiresAt(s *Session) time.Time {
	switch {
	case s.Status == StatusArchived && s.ArchivedAt != nil:
		return s.ArchivedAt.Add(p.Archived)
	case s.Status == StatusDeleted && s.DeletedAt != nil:
		return s.DeletedAt.Add(p.Deleted)
	default:
		idle := p.ActiveIdle
		if s.RetentionDays > 0 {
			idle = time.Duration(s.RetentionDays) * Day
		}
		return s.LastActivityAt.Add(idle)
	}
}
