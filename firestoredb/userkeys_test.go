package firestoredb

import (
	"context"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// TestUserDocIDInjective: a uid that is not a safe id never gets the key
// of a safe one, not even of a safe uid equal to the hash earlier versions
// keyed it by; two such uids never share a key.
func TestUserDocIDInjective(t *testing.T) {
	unsafe := []string{"a/b", "a b", "a:b", "__x", "a.b", "é", "a/b/"}
	seen := map[string]string{}
	for _, uid := range unsafe {
		key := UserDocID(uid)
		if ids.Valid(key) {
			t.Errorf("%q has the key %q, which a safe uid could have", uid, key)
		}
		if other, ok := seen[key]; ok {
			t.Errorf("%q and %q share the key %q", uid, other, key)
		}
		seen[key] = uid
		if old := legacyUserDocID(uid); UserDocID(old) == key || UserDocID(old) != old {
			t.Errorf("%q: its earlier key %q is still a key of its own", uid, old)
		}
	}
	for _, uid := range []string{"alice", "h" + "0123456789abcdef0123456789abcdef01234567", "_-x"} {
		if UserDocID(uid) != uid {
			t.Errorf("a safe uid %q is keyed %q, want itself", uid, UserDocID(uid))
		}
	}
}

// TestMigrateUserKeys: the memory, usage and account of a user whose uid
// is not a safe id, stored under an earlier version's key, are moved to
// today's by the migration; a document under that key that belongs to an
// account whose uid is that key stays, its own; a second run moves
// nothing.
func TestMigrateUserKeys(t *testing.T) {
	client, _ := emulatortest.Firestore(t)
	ctx := context.Background()
	db := New(client)
	uid := "custom:bee/keeper"
	old := legacyUserDocID(uid)
	must[*sessions.Session](t)(sessions.NewService(db, "gpt-4o-mini").Create(ctx, uid, sessions.CreateInput{}))
	u := must[*longterm.User](t)(db.GetUser(ctx, uid))
	u.Profile.Personal.Text = "Keeps bees."
	if err := db.SaveMemory(ctx, uid, 0, u, longterm.Change{}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddTokens(ctx, uid, "2026-03-01", 10); err != nil {
		t.Fatal(err)
	}
	// As an earlier version stored them: under the hash.
	for _, c := range userRoots {
		col := client.Collection(c)
		if _, err := db.moveTree(ctx, uid, col.Doc(UserDocID(uid)), col.Doc(old)); err != nil {
			t.Fatal(err)
		}
	}
	others := client.Collection(UsageCollection).Doc(old).Collection(TurnSlotsCollection).Doc("s00")
	if _, err := others.Set(ctx, slotDoc{UserID: old, Minute: 1}); err != nil {
		t.Fatal(err)
	}
	if got := must[*longterm.User](t)(db.GetUser(ctx, uid)); got.Profile.Personal.Text != "" {
		t.Fatalf("before the migration the memory is found at today's key: %+v", got.Profile)
	}

	rep := must[MigrateReport](t)(db.Migrate(ctx, "", nil))
	if rep.UserDocs != 4 {
		t.Errorf("moved %d documents, want 4 (the memory, its live facts, the day's spend, the account): %+v", rep.UserDocs, rep)
	}
	if got := must[*longterm.User](t)(db.GetUser(ctx, uid)); got.Profile.Personal.Text != "Keeps bees." {
		t.Errorf("after the migration the memory is %+v", got.Profile)
	}
	if r := must[*chat.UsageRecord](t)(db.GetUsage(ctx, uid)); r == nil || r.Days["2026-03-01"] != 10 {
		t.Errorf("after the migration the usage is %+v", r)
	}
	for _, c := range userRoots {
		if snap, err := client.Collection(c).Doc(old).Get(ctx); err == nil {
			t.Errorf("%s/%s left after the migration: %v", c, old, snap.Data())
		}
	}
	if days := must[[]string](t)(refIDs(ctx, client.Collection(UsageCollection).Doc(old).Collection(UsageDaysCollection))); len(days) != 0 {
		t.Errorf("usage days left under the earlier key: %v", days)
	}
	if _, err := others.Get(ctx); err != nil {
		t.Errorf("the slot of the account whose uid is the earlier key: %v", err)
	}
	if again := must[MigrateReport](t)(db.Migrate(ctx, "", nil)); again.UserDocs != 0 {
		t.Errorf("a second run moved %d documents", again.UserDocs)
	}
}

// refIDs lists the ids of col's documents, missing ones included.
func refIDs(ctx context.Context, col interface {
	DocumentRefs(context.Context) *firestore.DocumentRefIterator
}) ([]string, error) {
	refs, err := col.DocumentRefs(ctx).GetAll()
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out, err
}
