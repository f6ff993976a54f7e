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
	Must[int](t)(e.Sessions.Purge(ctx, "alice", b.ID))
	if got := read(true); len(got) != 0 {
		t.Errorf("after the purge: %v", got)
	}
}
