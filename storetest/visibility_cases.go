package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// testVisibility: a user's Visibility lists their deleted and archived
// sessions (empty, not nil, when there are none; never another user's),
// as every archive, deletion, restore and purge leaves them; a session being purged
// is listed as deleted until its purge is done, and then not at all; a
// session's units carry its title as it is renamed.
func testVisibility(t *testing.T, e *Env) {
	ctx := context.Background()
	store := e.DB.(recall.Store)
	read := func() recall.Visibility {
		t.Helper()
		v := Must[recall.Visibility](t)(store.Visibility(ctx, "alice"))
		slices.Sort(v.Deleted)
		slices.Sort(v.Archived)
		return v
	}
	if v := read(); v.Deleted == nil || v.Archived == nil || len(v.Deleted)+len(v.Archived)+len(v.OffPath) != 0 {
		t.Fatalf("a new user: %#v", v)
	}
	a, b, c := e.NewSession(t, "alice"), e.NewSession(t, "alice"), e.NewSession(t, "alice")
	bobs := e.NewSession(t, "bob")
	steps := []struct {
		name              string
		do                func()
		deleted, archived []*sessions.Session
	}{
		{"archived", func() { Must[*sessions.Session](t)(e.Sessions.Archive(ctx, "alice", a.ID)) }, nil, []*sessions.Session{a}},
		{"deleted", func() {
			Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", b.ID))
			Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "bob", bobs.ID))
		}, []*sessions.Session{b}, []*sessions.Session{a}},
		{"an archived one deleted", func() { Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", a.ID)) }, []*sessions.Session{a, b}, nil},
		{"restored", func() { Must[*sessions.Session](t)(e.Sessions.Restore(ctx, "alice", a.ID)) }, []*sessions.Session{b}, nil},
		{"purged", func() { Must[int](t)(PurgeAs(ctx, e.Sessions, "alice", b.ID)) }, nil, nil},
	}
	for _, step := range steps {
		step.do()
		v := read()
		if got, want := v.Deleted, sortedIDs(step.deleted); !slices.Equal(got, want) {
			t.Errorf("%s: deleted %v, want %v", step.name, got, want)
		}
		if got, want := v.Archived, sortedIDs(step.archived); !slices.Equal(got, want) {
			t.Errorf("%s: archived %v, want %v", step.name, got, want)
		}
	}

	q := e.Say(t, c, history.RoleUser, "first question")
	e.Say(t, c, history.RoleAssistant, "first answer")
	noErr(t, store.SaveUnit(ctx, recall.Unit{UserID: "alice", SessionID: c.ID, Model: "test/2", Vector: []float32{1, 0},
		Question: recall.Excerpt{ID: q.ID, Seq: q.Seq, Content: q.Content}, Bag: recall.BagOf(q.Content)}))
	title := "Renamed after its first exchange"
	Must[*sessions.Session](t)(e.Sessions.Update(ctx, "alice", c.ID, sessions.Update{Title: &title}))
	hits := Must[[]recall.Hit](t)(store.Nearest(ctx, recall.Query{UserID: "alice", SessionID: c.ID, Vector: []float32{1, 0}, K: 5}))
	if len(hits) != 1 || hits[0].Unit.SessionTitle != title {
		t.Errorf("the unit after a rename: %+v", hits)
	}
}

// sortedIDs are the ids of ss, sorted (empty, not nil, for none).
func sortedIDs(ss []*sessions.Session) []string {
	out := append([]string{}, idsOf(ss)...)
	slices.Sort(out)
	return out
}
