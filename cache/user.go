package cache

import (
	"maps"

	"github.com/chatmemory/backend/chat"
)

// user is what the cache knows of a user's turn documents and usage.
type user struct {
	slots    map[int]slot // slot index → as last read or written
	day      string
	dayFloor int              // spent on day: at least this much
	memory   chat.MemoryBlock // as last read (its Source is nil until one was)
	claiming bool             // a claim from what is kept is under way

	usageDay string       // the day usage is of ("": none kept)
	usage    chat.Version // the user's per-minute message quota and spend, as the store returned them
}

// slot is a rate-limit slot as read or written: the minute it was last
// taken in, and the store's version of it.
type slot struct {
	minute  int64
	version chat.Version
}

// spent adds n to what is known spent on day.
func (u *user) spent(day string, n int) {
	if u.day == day {
		u.dayFloor += n
	}
}

// forget drops what is kept of userID.
func (c *Store) forget(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.users, userID)
}

// dropUsage forgets the user's quota and spend as kept (a write changed
// them).
func (c *Store) dropUsage(userID string) {
	c.note(userID, func(u *user) { u.usageDay, u.usage = "", nil })
}

// note changes what is kept of userID with fn.
func (c *Store) note(userID string, fn func(*user)) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[userID]
	if !ok {
		if len(c.users) >= maxUsers {
			for id := range c.users { // any one: the map's order is random
				delete(c.users, id)
				break
			}
		}
		u = &user{slots: map[int]slot{}}
		c.users[userID] = u
	}
	fn(u)
}

// usageOn returns what is kept of the user's quota and their spend on
// day (nil: nothing).
func (c *Store) usageOn(userID, day string) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.users[userID]; ok && u.usageDay == day {
		return u.usage
	}
	return nil
}

// claimFor returns a copy of what is kept of userID, for one claim at a
// time: the user's turns at once on this instance would choose among the
// same few slots known free, and all but one would be refused, so while
// one claims from what is kept the others read (and choose among random
// slots, as on any instance). done ends it.
func (c *Store) claimFor(userID string) (u user, done func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.users[userID]
	if !ok || p.claiming {
		return user{}, nil, false
	}
	p.claiming = true
	done = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		p.claiming = false
	}
	cp := *p
	cp.slots = maps.Clone(p.slots)
	return cp, done, true
}
