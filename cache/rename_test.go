package cache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// TestRenameKeepsTheSession: a session this instance kept from its own
// commit (an append, as a turn's) and then renamed here stays kept: the
// rename costs one read more than on an instance that kept nothing (the
// session document alone, its window taken from what was kept, which its
// contextRev shows current), and the next read of its context reads the
// session alone and gives what a full read gives, renamed.
func TestRenameKeepsTheSession(t *testing.T) {
	ctx := context.Background()
	one, other, e, counter := countedInstances(t)
	measure := func(f func()) firestoretest.Counts {
		before := counter.Snapshot()
		f()
		return counter.Snapshot().Sub(before)
	}
	rename := func(db interface {
		UpdateSession(context.Context, string, func(*sessions.Session) error) (*sessions.Session, error)
	}, id, title string) {
		t.Helper()
		if _, err := db.UpdateSession(ctx, id, func(s *sessions.Session) error { s.Title = title; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	appendHere := func(s *sessions.Session) {
		t.Helper()
		plan, err := e.History.PlanFor("alice", s.ID, "", history.Draft{Role: history.RoleUser, Content: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := one.RunAppend(ctx, chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: "2026-01-15"}, func(st *chat.AppendState) (*chat.AppendWrite, error) {
			ss, tl := st.Session.Clone(), st.Tail.Clone()
			msgs, err := plan(ss, tl, st.Stored)
			return &chat.AppendWrite{Session: ss, Tail: tl, Messages: msgs, Quota: st.Usage}, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	kept, twin := e.NewSession(t, "alice"), e.NewSession(t, "alice") // alike
	appendHere(kept)
	appendHere(twin)

	here := measure(func() { rename(one, kept.ID, "renamed here") })
	elsewhere := measure(func() { rename(other, twin.ID, "renamed elsewhere") }) // other kept nothing
	if here.Reads != elsewhere.Reads+1 || here.RoundTrips != elsewhere.RoundTrips+1 || here.Writes != elsewhere.Writes {
		t.Errorf("a rename of a kept session: %s; of one kept nowhere: %s; want one read and one round trip more", here, elsewhere)
	}
	var peeked *chat.TurnState
	c := measure(func() {
		var err error
		if peeked, err = one.ReadTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: kept.ID}); err != nil {
			t.Fatal(err)
		}
	})
	full, err := other.ReadTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: kept.ID})
	if err != nil {
		t.Fatal(err)
	}
	if c.Reads != 1 || c.RoundTrips != 1 || peeked.Session.Title != "renamed here" ||
		peeked.ContextVersion != full.ContextVersion || fmt.Sprint(peeked.Tail) != fmt.Sprint(full.Tail) {
		t.Errorf("the renamed session's context: %s, %q, %v; want 1 read of %q, %v", c, peeked.Session.Title, peeked.Tail, full.Session.Title, full.Tail)
	}
}
