package cache

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// RunAppend runs an append through the store, given what is kept of the
// session at the version the app read its context at (q.IfMatch), and of
// the user's quota and spend, so that the store may read nothing; it
// keeps what the store returns.
func (c *Store) RunAppend(ctx context.Context, q chat.AppendQuery, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (string, error) {
	var last *chat.AppendWrite
	watched := watch(plan, &last)
	after, usage, err := c.known.AppendKnown(ctx, q, c.at(q.SessionID, q.IfMatch), c.usageOn(q.UserID, q.Day), watched)
	if err != nil {
		c.drop(q.SessionID)
		c.dropUsage(q.UserID)
		return "", err
	}
	c.put(q.SessionID, after)
	c.note(q.UserID, func(u *user) {
		u.usageDay, u.usage = q.Day, usage
		if usage == nil {
			u.usageDay = ""
		}
		if last != nil {
			u.spent(q.Day, last.Tokens)
		}
	})
	return after.ContextVersion, nil
}

// CreateSession creates the session and keeps it, with no context yet:
// its first turn here can claim without reading it.
func (c *Store) CreateSession(ctx context.Context, s *sessions.Session) error {
	st, err := c.known.CreateKnown(ctx, s)
	if err != nil {
		return err
	}
	c.put(s.ID, st)
	return nil
}
