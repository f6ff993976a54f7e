package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// testDeletedList: a turn that asks for them reads the ids of its user's
// deleted sessions (empty, not nil, when there are none; nil when it does
// not ask), as every deletion, restore and purge leaves them, and never
// another user's.
func testDeletedList(t *testing.T, e *Env) {
	ctx := context.Background()
	turns := e.DB.(chat.TurnStore)
	current := e.NewSession(t, "alice")
	a, b := e.NewSession(t, "alice"), e.NewSession(t, "alice")
	bobs := e.NewSession(t, "bob")
	read := func(ask bool) []string {
		t.Helper()
		st := Must[*chat.TurnState](t)(turns.RunTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: current.ID, Deleted: ask}, nil,
			func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
		slices.Sort(st.Deleted)
		return st.Deleted
	}
	if got := read(true); got == nil || len(got) != 0 {
		t.Fatalf("none deleted: %#v", got)
	}
	for _, s := range []*sessions.Session{a, b} {
		Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
	}
	Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "bob", bobs.ID))
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if got := read(true); !slices.Equal(got, want) {
		t.Fatalf("two deleted: %v, want %v", got, want)
	}
	if got := read(false); got != nil {
		t.Errorf("read without asking: %v", got)
	}
	Must[*sessions.Session](t)(e.Sessions.Restore(ctx, "alice", a.ID))
	if got := read(true); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("one restored: %v, want %v", got, []string{b.ID})
	}
	Must[int](t)(PurgeAs(ctx, e.Sessions, "alice", b.ID))
	if got := read(true); len(got) != 0 {
		t.Errorf("after the purge: %v", got)
	}
}

// testUpdateSessions: several sessions of one user change together, each
// with its own outcome (fn's error or NotFound, another user's included,
// leaves it as it was); the deleted list follows, as UpdateSession's does.
func testUpdateSessions(t *testing.T, e *Env) {
	ctx := context.Background()
	turns := e.DB.(chat.TurnStore)
	a, b, c := e.NewSession(t, "alice"), e.NewSession(t, "alice"), e.NewSession(t, "alice")
	bobs := e.NewSession(t, "bob")
	skip := sessions.NotFound("skipped")
	now := e.Clock.Now()
	each, err := e.DB.UpdateSessions(ctx, "alice", []string{a.ID, b.ID, "nope", bobs.ID, c.ID}, func(s *sessions.Session) error {
		if s.ID == b.ID {
			return skip
		}
		return s.Apply(sessions.ActionDelete, now, sessions.DefaultPolicy())
	})
	if err != nil {
		t.Fatal(err)
	}
	if each[0] != nil || each[1] != skip || each[2] == nil || each[3] == nil || each[4] != nil {
		t.Fatalf("outcomes %v", each)
	}
	for s, want := range map[*sessions.Session]sessions.Status{a: sessions.StatusDeleted, b: sessions.StatusActive, c: sessions.StatusDeleted} {
		if got := e.Reload(t, s).Status; got != want {
			t.Errorf("%s is %s, want %s", s.ID, got, want)
		}
	}
	if got := Must[*sessions.Session](t)(e.DB.GetSession(ctx, bobs.ID)); got.Status != sessions.StatusActive {
		t.Errorf("bob's session is %s", got.Status)
	}
	st := Must[*chat.TurnState](t)(turns.RunTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: b.ID, Deleted: true}, nil,
		func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	want := []string{a.ID, c.ID}
	slices.Sort(want)
	slices.Sort(st.Deleted)
	if !slices.Equal(st.Deleted, want) {
		t.Errorf("deleted list %v, want %v", st.Deleted, want)
	}
}
