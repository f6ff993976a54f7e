package firestoredb_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/storetest"
)

// TestLiveFactsApart: a memory document written before the live facts had
// a document of their own (users/{uid}/memory/facts) is read whole, facts
// included, and its next save moves them there, even a save that keeps
// them as they are; after it the memory document holds none. Written
// before saves kept whether superseded facts were filed, it may have
// some, and says so after its save too.
func TestLiveFactsApart(t *testing.T) {
	ctx := context.Background()
	db, client := open(t)
	ref := client.Collection(firestoredb.UsersCollection).Doc(firestoredb.UserDocID("carol"))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := ref.Set(ctx, map[string]any{"userId": "carol", "version": 1, "block": "Carol rows.", "blockTokens": 3, "updatedAt": now,
		"facts": []any{map[string]any{"id": "f1", "userId": "carol", "content": "Carol rows.", "category": "personal", "confidence": 0.9,
			"sources": []any{}, "createdAt": now, "lastConfirmedAt": now}}}); err != nil {
		t.Fatal(err)
	}
	u := storetest.Must[*longterm.User](t)(db.GetUser(ctx, "carol"))
	if u.Partial || len(u.Facts) != 1 || u.Facts[0].Content != "Carol rows." || !u.Filed {
		t.Fatalf("an earlier layout's memory read: partial %v, facts %+v, filed %v", u.Partial, u.Facts, u.Filed)
	}
	u.Profile.Focus = longterm.ProfileField{Text: "Rowing."}
	if err := db.SaveMemory(ctx, "carol", 1, u, longterm.Change{KeepFacts: true}); err != nil {
		t.Fatal(err)
	}
	doc := storetest.Must[map[string]any](t)(data(ctx, ref))
	if _, inline := doc["facts"]; inline {
		t.Errorf("the save left the facts in the memory document")
	}
	live := storetest.Must[[]longterm.Fact](t)(db.LiveFacts(ctx, "carol"))
	got := storetest.Must[*longterm.User](t)(db.GetUser(ctx, "carol"))
	if len(live) != 1 || live[0].Content != "Carol rows." || len(got.Facts) != 1 || got.Version != 2 || got.Profile.Focus.Text != "Rowing." || !got.Filed {
		t.Errorf("after the save: live facts %+v; read %+v", live, got)
	}
	// A user with no memory has no facts, and a read of them is no error.
	if none := storetest.Must[[]longterm.Fact](t)(db.LiveFacts(ctx, "nobody")); len(none) != 0 {
		t.Errorf("nobody's live facts: %+v", none)
	}
}
