package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
)

// testLongTermStore: longterm.Store. A user's memory is saved whole under
// optimistic versions, with superseded facts filed and dropped in the same
// save; a save learned from a session that is gone or not the user's is
// refused; erasure removes and counts everything.
func testLongTermStore(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	u := Must[*longterm.User](t)(db.GetUser(ctx, "alice"))
	if u.UserID != "alice" || u.Version != 0 || u.Disabled || len(u.Facts) != 0 || u.Block != "" {
		t.Fatalf("a new user's memory: %+v", u)
	}
	if sup := Must[[]longterm.Fact](t)(db.ListSuperseded(ctx, "alice")); len(sup) != 0 {
		t.Fatalf("a new user has superseded facts: %+v", sup)
	}
	s := e.NewSession(t, "alice")
	at := Epoch
	src := []longterm.Source{{SessionID: s.ID, StartSeq: 0, EndSeq: 1}}
	live := longterm.Fact{ID: "f1", UserID: "alice", Content: "The user is vegetarian.", Category: longterm.CategoryPreference,
		Confidence: 0.9, Sources: src, CreatedAt: at, LastConfirmedAt: at}
	old := longterm.Fact{ID: "f0", UserID: "alice", Content: "The user eats fish.", Category: longterm.CategoryPreference,
		Confidence: 0.8, Sources: src, CreatedAt: at, LastConfirmedAt: at, InvalidAt: &at, SupersededBy: "f1"}
	u.Profile.Work = longterm.ProfileField{Text: "Backend engineer", UpdatedAt: &at, SessionID: s.ID}
	u.Facts, u.Block, u.BlockTokens, u.UpdatedAt = []longterm.Fact{live}, "What you know…\n- The user is vegetarian.", 12, at
	if err := db.SaveMemory(ctx, "alice", 0, u, longterm.Change{File: []longterm.Fact{old}, Sources: []string{s.ID}}); err != nil {
		t.Fatal(err)
	}
	got := Must[*longterm.User](t)(db.GetUser(ctx, "alice"))
	if got.Version != 1 || len(got.Facts) != 1 || got.Facts[0].Content != live.Content || got.Facts[0].Confidence != 0.9 ||
		len(got.Facts[0].Sources) != 1 || got.Facts[0].Sources[0] != src[0] || !got.Facts[0].Live() ||
		got.Profile.Work.Text != "Backend engineer" || got.Profile.Work.SessionID != s.ID || got.Block != u.Block || got.BlockTokens != 12 {
		t.Fatalf("saved memory read back as %+v", got)
	}
	sup := Must[[]longterm.Fact](t)(db.ListSuperseded(ctx, "alice"))
	if len(sup) != 1 || sup[0].ID != "f0" || sup[0].SupersededBy != "f1" || sup[0].InvalidAt == nil || !sup[0].InvalidAt.Equal(at) {
		t.Fatalf("superseded facts: %+v", sup)
	}

	WantCode(t, db.SaveMemory(ctx, "alice", 0, u, longterm.Change{}), errs.ECONFLICT)
	bobs := e.NewSession(t, "bob")
	for name, sources := range map[string][]string{"missing": {"no-such-session"}, "another user's": {bobs.ID}} {
		if err := db.SaveMemory(ctx, "alice", 1, u, longterm.Change{Sources: sources}); !errors.Is(err, longterm.ErrSourceGone) {
			t.Errorf("a save learned from a %s session: %v, want ErrSourceGone", name, err)
		}
	}
	if v := Must[*longterm.User](t)(db.GetUser(ctx, "alice")).Version; v != 1 {
		t.Fatalf("refused saves changed the version to %d", v)
	}

	u.Disabled = true
	if err := db.SaveMemory(ctx, "alice", 1, u, longterm.Change{Drop: []string{"f0"}}); err != nil {
		t.Fatal(err)
	}
	if sup := Must[[]longterm.Fact](t)(db.ListSuperseded(ctx, "alice")); len(sup) != 0 {
		t.Fatalf("a dropped superseded fact is still listed: %+v", sup)
	}
	if got := Must[*longterm.User](t)(db.GetUser(ctx, "alice")); got.Version != 2 || !got.Disabled {
		t.Fatalf("after the second save: version %d, disabled %v", got.Version, got.Disabled)
	}
	if b := Must[*longterm.User](t)(db.GetUser(ctx, "bob")); b.Version != 0 || len(b.Facts) != 0 || b.Profile.Work.Text != "" {
		t.Fatalf("bob sees %+v", b)
	}

	if err := db.SaveMemory(ctx, "alice", 2, u, longterm.Change{File: []longterm.Fact{old}}); err != nil {
		t.Fatal(err)
	}
	if n := Must[int](t)(db.EraseMemory(ctx, "alice")); n < 2 {
		t.Errorf("erasing alice's memory counted %d documents, want at least 2 (hers and one superseded fact; a store may keep her live facts apart)", n)
	}
	if got := Must[*longterm.User](t)(db.GetUser(ctx, "alice")); got.Version != 0 || len(got.Facts) != 0 || got.Disabled {
		t.Errorf("after erasure: %+v", got)
	}
	if sup := Must[[]longterm.Fact](t)(db.ListSuperseded(ctx, "alice")); len(sup) != 0 {
		t.Errorf("after erasure, superseded: %+v", sup)
	}
	if n := Must[int](t)(db.EraseMemory(ctx, "alice")); n != 0 {
		t.Errorf("erasing again counted %d", n)
	}
}
