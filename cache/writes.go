package cache

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// Every other write of a session, its context or a user's spend goes
// through the store as it is, and the cache forgets what it kept of what
// the write changes: the write tells no version the cache could keep.

// UpdateSession changes the session alone (its title, its settings), so
// its context is as kept: of an active session kept here, the cache reads
// the session again, taking the context from what it kept (the store's
// ReadKnown: one document), so that the next turn here still claims
// without reading. A session's generated title, written after its first
// turn, would otherwise leave its second turn to read everything.
func (c *Store) UpdateSession(ctx context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error) {
	kept := c.latest(id)
	s, err := c.Source.UpdateSession(ctx, id, fn)
	c.drop(id)
	if err != nil || kept == nil || s.Status != sessions.StatusActive {
		return s, err
	}
	if st, err := c.known.ReadKnown(ctx, chat.TurnQuery{UserID: s.UserID, SessionID: id}, kept); err == nil {
		c.putUnlessKept(id, st)
	}
	return s, nil
}

func (c *Store) UpdateSessions(ctx context.Context, userID string, ids []string, fn func(*sessions.Session) error) ([]error, error) {
	defer c.drop(ids...)
	return c.Source.UpdateSessions(ctx, userID, ids, fn)
}

func (c *Store) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	defer c.drop(id)
	return c.Source.PurgeSession(ctx, id, check, forget)
}

func (c *Store) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	defer c.drop(ids...)
	return c.Source.PurgeSessions(ctx, ids, check, forget)
}

func (c *Store) ResumePurges(ctx context.Context, ids []string, forget sessions.Forget) []retention.Purged {
	defer c.drop(ids...)
	return c.Source.ResumePurges(ctx, ids, forget)
}

func (c *Store) Append(ctx context.Context, sessionID, key string, plan history.Plan) (*history.Appended, error) {
	defer c.drop(sessionID)
	return c.Source.Append(ctx, sessionID, key, plan)
}

func (c *Store) UpdateTail(ctx context.Context, sessionID string, fn func(*sessions.Session, *history.Tail) error) error {
	defer c.drop(sessionID)
	return c.Source.UpdateTail(ctx, sessionID, fn)
}

func (c *Store) SaveCompaction(ctx context.Context, sessionID string, comp *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	defer c.drop(sessionID)
	return c.Source.SaveCompaction(ctx, sessionID, comp, fn)
}

func (c *Store) UpdateFeedback(ctx context.Context, sessionID, messageID string, fn func(*sessions.Session, *history.Message) (bool, error)) (*history.Message, error) {
	defer c.drop(sessionID)
	return c.Source.UpdateFeedback(ctx, sessionID, messageID, fn)
}

func (c *Store) TrimMessages(ctx context.Context, sessionID string, before, limit int, fn retention.TrimFunc) (int, bool, error) {
	defer c.drop(sessionID)
	return c.Source.TrimMessages(ctx, sessionID, before, limit, fn)
}

func (c *Store) UpdateUsage(ctx context.Context, userID, day string, fn func(*chat.Usage) error) error {
	defer c.dropUsage(userID)
	return c.Source.UpdateUsage(ctx, userID, day, fn)
}

// AddTokens adds to the spend; what is known spent grows by n whether or
// not it landed: more is the safe side of a limit.
func (c *Store) AddTokens(ctx context.Context, userID, day string, n int) error {
	defer c.charged(userID, day, n, true)
	return c.Source.AddTokens(ctx, userID, day, n)
}

func (c *Store) ChargeAfter(ctx context.Context, userID, day string, n int) (err error) {
	defer func() { c.charged(userID, day, n, errs.CodeOf(err) != errs.ENOTFOUND) }()
	return c.Source.ChargeAfter(ctx, userID, day, n)
}

func (c *Store) ChargeMemory(ctx context.Context, userID, day string, n int) (err error) {
	defer func() { c.charged(userID, day, n, errs.CodeOf(err) != errs.ENOTFOUND) }()
	return c.Source.ChargeMemory(ctx, userID, day, n)
}

// charged notes a charge of n on day: the usage kept is no longer
// current, and, unless the charge surely did not land, n more is spent.
func (c *Store) charged(userID, day string, n int, mayHaveLanded bool) {
	c.note(userID, func(u *user) {
		u.usageDay, u.usage = "", nil
		if mayHaveLanded {
			u.spent(day, n)
		}
	})
}

func (c *Store) DeleteUsage(ctx context.Context, userID string) (int, error) {
	defer c.forget(userID)
	return c.Source.DeleteUsage(ctx, userID)
}

func (c *Store) DeleteUserDocuments(ctx context.Context, userID string) (int, error) {
	defer c.forget(userID)
	return c.Source.DeleteUserDocuments(ctx, userID)
}
