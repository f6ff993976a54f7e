package cache

import "github.com/chatmemory/backend/chat"

// Hints: what a session's last turn here embedded and recalled (see
// chat.Hint), kept beside what is kept of sessions. A hint is a guess a
// turn acts on early (embedding its message beside its first read); a
// wrong one costs an embedding, never a wrong answer, so a write drops
// none.

// maxHints bounds the hints kept (all are dropped past it).
const maxHints = 10_000

// Hint is the session's hint; zero if none is kept.
func (c *Store) Hint(sessionID string) chat.Hint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hints[sessionID]
}

// SetHint keeps the session's hint (a zero one is forgotten).
func (c *Store) SetHint(sessionID string, h chat.Hint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case h == chat.Hint{}:
		delete(c.hints, sessionID)
	case c.hints == nil || len(c.hints) >= maxHints:
		c.hints = map[string]chat.Hint{sessionID: h}
	default:
		c.hints[sessionID] = h
	}
}

var _ chat.Hints = (*Store)(nil)
