package cache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// TestContextFence: a read that only shows a context, of a session this
// instance kept, reads the session document alone (one round trip, one
// document) and gives what a full read gives, also once another instance
// changed the session alone (its contextRev says the window is as kept).
// A write of the window alone,
// by another instance, changes the session document too, so the next such
// read sees it (in a second round trip). An instance whose kept sessions
// keep proving stale stops reading the session alone, and starts again once
// they prove current.
func TestContextFence(t *testing.T) {
	ctx := context.Background()
	one, other, e, counter := countedInstances(t)
	s := e.NewSession(t, "alice")
	e.Say(t, s, history.RoleUser, "first")
	e.Say(t, s, history.RoleAssistant, "second")
	preview := func(db *cache.Store) (*chat.TurnState, firestoretest.Counts) {
		t.Helper()
		before := counter.Snapshot()
		st, err := db.ReadTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		return st, counter.Snapshot().Sub(before)
	}
	same := func(what string, got, want *chat.TurnState) {
		t.Helper()
		if got.ContextVersion != want.ContextVersion || fmt.Sprint(got.Session) != fmt.Sprint(want.Session) || fmt.Sprint(got.Tail) != fmt.Sprint(want.Tail) {
			t.Errorf("%s: version %q, tail %v; a full read gives %q, %v", what, got.ContextVersion, got.Tail, want.ContextVersion, want.Tail)
		}
	}
	full, c := preview(one)
	if c.RoundTrips != 1 || c.Reads != 2 {
		t.Errorf("a first read: %s; want 1 round trip, the session and its window", c)
	}
	peeked, c := preview(one)
	if c.RoundTrips != 1 || c.Reads != 1 {
		t.Errorf("a read of a kept session: %s; want 1 round trip, the session alone", c)
	}
	same("a read of a kept session", peeked, full)

	// Another instance changes the session alone (its title): the window
	// is as kept, which the session's contextRev shows; one document read.
	if _, err := other.UpdateSession(ctx, s.ID, func(s *sessions.Session) error { s.Title = "renamed elsewhere"; return nil }); err != nil {
		t.Fatal(err)
	}
	renamed, c := preview(one)
	if c.RoundTrips != 1 || c.Reads != 1 || renamed.Session.Title != "renamed elsewhere" {
		t.Errorf("a read of a kept session renamed elsewhere: %s, title %q; want 1 round trip, the session alone, renamed", c, renamed.Session.Title)
	}
	want, _ := preview(other)
	same("a read of a kept session renamed elsewhere", renamed, want)

	// Another instance writes the window alone (the session is as it was).
	trim := func() {
		t.Helper()
		if err := other.UpdateTail(ctx, s.ID, func(_ *sessions.Session, tl *history.Tail) error {
			tl.Messages = tl.Messages[1:]
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	trim()
	stale, c := preview(one)
	if c.RoundTrips != 2 {
		t.Errorf("a read of a session written elsewhere: %s; want 2 round trips", c)
	}
	fresh, _ := preview(other)
	same("a read of a session written elsewhere", stale, fresh)
	if len(stale.Tail.Messages) != 1 {
		t.Errorf("the window written elsewhere reads %v", stale.Tail.Messages)
	}

	// Kept sessions that keep proving stale: the instance reads whole.
	for i := 0; ; i++ {
		e.Say(t, s, history.RoleUser, fmt.Sprint("written elsewhere ", i)) // drops only what one kept
		preview(one)                                                       // keeps it again
		trim()
		if _, c := preview(one); c.RoundTrips == 1 {
			if c.Reads != 2 {
				t.Errorf("a stale instance's read: %s; want the session and its window", c)
			}
			break
		}
		if i == 5 {
			t.Fatal("an instance whose kept sessions prove stale still reads the session alone")
		}
	}
	// And once they prove current again, it reads the session alone again.
	for i := 0; ; i++ {
		if _, c := preview(one); c.Reads == 1 {
			break
		}
		if i == 80 {
			t.Fatal("an instance whose kept sessions prove current never reads the session alone again")
		}
	}
}
