package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// testAccounts: retention.AccountStore. Creating a session records its
// user as seen then; accounts unseen since a time are listed oldest first
// in pages; MarkSeen moves them on but never brings back an erased one;
// erasure deletes the record.
func testAccounts(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	e.NewSession(t, "alice")
	e.Clock.Advance(time.Hour)
	e.NewSession(t, "bob")
	e.Clock.Advance(time.Hour)
	e.NewSession(t, "carol")
	if got := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now(), nil, 10)); len(got) != 2 {
		t.Fatalf("seen before carol's session: %+v", got)
	}
	all := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now().Add(time.Second), nil, 10))
	if len(all) != 3 || all[0].UserID != "alice" || all[1].UserID != "bob" || !all[0].SeenAt.Equal(Epoch) {
		t.Fatalf("accounts: %+v", all)
	}
	page := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now(), nil, 1))
	next := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now(), &retention.AccountCursor{SeenAt: page[0].SeenAt, UserID: page[0].UserID}, 10))
	if len(page) != 1 || len(next) != 1 || next[0].UserID != "bob" {
		t.Fatalf("pages: %+v then %+v", page, next)
	}
	if err := db.MarkSeen(ctx, []string{"alice", "nobody"}, e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now(), nil, 10)); len(got) != 1 || got[0].UserID != "bob" {
		t.Fatalf("after alice was seen: %+v", got)
	}
	// Recording an account that has a record changes nothing; one that
	// has none is recorded.
	old := e.Clock.Now().Add(-90 * 24 * time.Hour)
	for _, uid := range []string{"carol", "dave"} {
		if err := db.RecordAccount(ctx, uid, old); err != nil {
			t.Fatal(err)
		}
	}
	if got := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now().Add(-time.Hour), nil, 10)); len(got) != 1 || got[0].UserID != "dave" || !got[0].SeenAt.Equal(old) {
		t.Fatalf("recorded: %+v", got)
	}
	s := Must[[]*sessions.Session](t)(db.ListSessions(ctx, sessions.ListQuery{UserID: "bob", Status: sessions.StatusActive, Limit: 10}))
	for _, x := range s {
		e.Purge(t, "bob", x)
	}
	Must[int](t)(db.DeleteUserDocuments(ctx, "bob"))
	if err := db.MarkSeen(ctx, []string{"bob"}, e.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now().Add(time.Hour), nil, 10)); len(got) != 3 || slices.ContainsFunc(got, func(a retention.Account) bool { return a.UserID == "bob" }) {
		t.Fatalf("after bob's erasure: %+v", got)
	}
}

// testHolders: retention.AccountStore's HoldersAfter. The users who hold
// memory or usage without a session are listed, in pages, each recorded
// by the commit that started that document.
func testHolders(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	u := Must[*longterm.User](t)(db.GetUser(ctx, "erin"))
	u.Profile.Work.Text, u.UpdatedAt = "Beekeeper.", e.Clock.Now()
	noErr(t, db.SaveMemory(ctx, "erin", 0, u, longterm.Change{}))
	noErr(t, db.UpdateUsage(ctx, "frank", chat.Day(e.Clock.Now()), func(u *chat.Usage) error {
		u.SearchMinute, u.MinuteSearches = e.Clock.Now().Unix()/60, 1
		return nil
	}))
	var got []string
	for after := ""; ; {
		page, next := Must2[[]retention.Account, string](t)(db.HoldersAfter(ctx, after, 1))
		if len(page) > 1 {
			t.Fatalf("a page of %d, want at most 1", len(page))
		}
		for _, a := range page {
			got = append(got, a.UserID)
		}
		if next == "" {
			break
		}
		after = next
	}
	if slices.Sort(got); !slices.Equal(slices.Compact(got), []string{"erin", "frank"}) {
		t.Errorf("holders of memory or usage: %v, want erin and frank", got)
	}
	recorded := Must[[]retention.Account](t)(db.AccountsSeenBefore(ctx, e.Clock.Now().Add(time.Minute), nil, 10))
	if ids := accountIDs(recorded); !slices.Equal(ids, []string{"erin", "frank"}) {
		t.Errorf("recorded by their first writes: %v, want erin and frank", ids)
	}
}

func accountIDs(as []retention.Account) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.UserID
	}
	slices.Sort(out)
	return out
}
