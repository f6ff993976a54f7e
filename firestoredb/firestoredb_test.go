package firestoredb_test

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

func open(t *testing.T) (*firestoredb.DB, *firestore.Client) {
	client, _ := emulatortest.Firestore(t)
	return firestoredb.New(client), client
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		db, _ := open(t)
		return db
	})
}

// countUnder counts the documents in every subcollection of a session.
func countUnder(t *testing.T, client *firestore.Client, id string) int {
	t.Helper()
	ctx := context.Background()
	cols, err := client.Collection(firestoredb.SessionsCollection).Doc(id).Collections(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cols {
		snaps, err := c.Documents(ctx).GetAll()
		if err != nil {
			t.Fatal(err)
		}
		n += len(snaps)
	}
	return n
}

func TestPurgeLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, client := open(t)
	e := storetest.NewEnv(t, db)
	s := e.NewSession(t, "alice")
	for i := 0; i < 40; i++ {
		e.Say(t, s, history.RoleUser, fmt.Sprintf("m%d", i))
	}
	// A document in another subcollection, as later features add them.
	if _, err := client.Collection(firestoredb.SessionsCollection).Doc(s.ID).Collection("compactions").Doc("c1").Set(ctx, map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if n := countUnder(t, client, s.ID); n != 43 { // 40 messages, the context (head and one page) and one more
		t.Fatalf("%d documents under the session before purge", n)
	}
	storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
	if n := storetest.Must[int](t)(e.Sessions.Purge(ctx, "alice", s.ID)); n != 44 {
		t.Errorf("purge reported %d documents, want 44", n)
	}
	if n := countUnder(t, client, s.ID); n != 0 {
		t.Errorf("%d documents left under the purged session", n)
	}
	snap, err := client.Collection(firestoredb.SessionsCollection).Doc(s.ID).Get(ctx)
	if snap == nil || snap.Exists() || err == nil {
		t.Errorf("session document still exists")
	}
	markers, err := client.Collection(firestoredb.PurgesCollection).Documents(ctx).GetAll()
	if err != nil || len(markers) != 0 {
		t.Errorf("%d purge markers left (%v)", len(markers), err)
	}
}

// TestResumePurge: a purge cut off after the session document went is
// finished by ResumePurge, which finds the marker.
func TestResumePurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, client := open(t)
	e := storetest.NewEnv(t, db)
	s := e.NewSession(t, "alice")
	for i := 0; i < 5; i++ {
		e.Say(t, s, history.RoleUser, fmt.Sprintf("m%d", i))
	}
	storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	// With a cancelled context the transaction itself fails: nothing happens.
	_, err := e.Sessions.Purge(cancelled, "alice", s.ID)
	storetest.WantCode(t, err, sessions.EUNAVAILABLE)
	if n := countUnder(t, client, s.ID); n != 7 { // 5 messages and the context (head and one page)
		t.Fatalf("a failed purge deleted messages: %d left", n)
	}
	// Simulate the cut-off: session gone, marker present, messages present.
	if _, err := client.Collection(firestoredb.PurgesCollection).Doc(s.ID).Set(ctx, map[string]any{"userId": "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Collection(firestoredb.SessionsCollection).Doc(s.ID).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Must[int](t)(db.ResumePurge(ctx, s.ID, nil)); n != 7 {
		t.Errorf("resume deleted %d documents, want 7", n)
	}
	if n := countUnder(t, client, s.ID); n != 0 {
		t.Errorf("%d documents left", n)
	}
	if n := storetest.Must[int](t)(db.ResumePurge(ctx, s.ID, nil)); n != 0 {
		t.Errorf("a second resume deleted %d documents", n)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	if err := db.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}
