package firestoredb_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
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
	// A compaction record, as the backend saves it.
	c := &history.Compaction{ID: history.CompactionID(9), StartSeq: 0, EndSeq: 9, Summary: "s", CreatedAt: storetest.Epoch}
	if err := db.SaveCompaction(ctx, s.ID, c, func(s *sessions.Session, tl *history.Tail) error {
		s.Bookkeeping.Summary, s.Bookkeeping.SummaryUpdatedAt, tl.Compaction = c.Summary, &c.CreatedAt, c
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := countUnder(t, client, s.ID); n != 42 { // 40 messages, the tail document and the record
		t.Fatalf("%d documents under the session before purge", n)
	}
	storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
	if n := storetest.Must[int](t)(storetest.PurgeAs(ctx, e.Sessions, "alice", s.ID)); n != 43 {
		t.Errorf("purge reported %d documents, want 43", n)
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
	_, err := storetest.PurgeAs(cancelled, e.Sessions, "alice", s.ID)
	storetest.WantCode(t, err, errs.EUNAVAILABLE)
	if n := countUnder(t, client, s.ID); n != 6 { // 5 messages and the tail document
		t.Fatalf("a failed purge deleted messages: %d left", n)
	}
	// Simulate the cut-off: session gone, marker present, messages present.
	if _, err := client.Collection(firestoredb.PurgesCollection).Doc(s.ID).Set(ctx, map[string]any{"userId": "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Collection(firestoredb.SessionsCollection).Doc(s.ID).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Must[int](t)(db.ResumePurge(ctx, s.ID, nil)); n != 6 {
		t.Errorf("resume deleted %d documents, want 6", n)
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

// TestPurgeReadsIDsFromTheContext: a session whose context holds every
// message is purged with no query (its after-turn jobs, a job left over
// included, are named by its replies' ids); a longer one, and a branched
// one, by queries; each leaves nothing behind.
func TestPurgeReadsIDsFromTheContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var queries atomic.Int64
	counter := &firestoretest.Counter{OnCall: func(method string) {
		if strings.HasSuffix(method, "/RunQuery") {
			queries.Add(1)
		}
	}}
	client, _ := emulatortest.FirestoreWith(t, func(ctx context.Context, project string) (*firestore.Client, error) {
		return firestoretest.Dial(ctx, project, counter)
	})
	db := firestoredb.New(client)
	e := storetest.NewEnv(t, db)
	short := e.NewSession(t, "alice")
	long := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", sessions.CreateInput{
		Context: sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 256}}))
	branched := e.NewSession(t, "alice")
	for i := 0; i < 30; i++ {
		for _, s := range []*sessions.Session{short, long, branched} {
			e.Say(t, s, history.RoleUser, fmt.Sprintf("message %d, long enough that thirty of them overflow a small budget", i))
		}
	}
	branched = e.Reload(t, branched)
	base := storetest.Must[*history.Tail](t)(e.History.BranchTail(ctx, branched, 3))
	if err := db.UpdateTail(ctx, branched.ID, func(cur *sessions.Session, tl *history.Tail) error {
		*tl = *e.History.ForkTail(cur, base, 3)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.Say(t, branched, history.RoleUser, "a second version of message 4")
	// A short session whose exchanges were embedded: they are deleted by
	// their replies' ids, with no query of recall/.
	embedded := e.NewSession(t, "alice")
	for i := 0; i < 4; i++ {
		q := e.Say(t, embedded, history.RoleUser, fmt.Sprintf("question %d", i))
		r := e.Say(t, embedded, history.RoleAssistant, fmt.Sprintf("answer %d", i))
		if i == 3 { // a job its turn did not finish
			if _, err := client.Collection(firestoredb.SessionsCollection).Doc(embedded.ID).Collection(firestoredb.JobsCollection).Doc(r.ID).
				Set(ctx, map[string]any{"sessionId": embedded.ID, "createdAt": time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.SaveUnit(ctx, recall.Unit{UserID: "alice", SessionID: embedded.ID, Question: recall.Excerpt{ID: q.ID, Seq: q.Seq, Content: q.Content},
			Reply: recall.Excerpt{ID: r.ID, Seq: r.Seq, Content: r.Content}, Model: "m", Vector: []float32{1, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		s       *sessions.Session
		queries int64 // how many; -1: more than one
		docs    int
	}{
		{"Short", short, 0, 30 + 1 + 1},        // messages, the tail document, the session
		{"Embedded", embedded, 0, 8 + 3 + 1},   // messages, the tail document, the recall marker, the session, the job (its units of search uncounted)
		{"Long", long, -1, 0},                  // its context documents vary
		{"Branched", branched, -1, 31 + 1 + 1}, // the tail document: the branch's 5 messages
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", tc.s.ID))
			before := queries.Load()
			n := storetest.Must[int](t)(storetest.PurgeAs(ctx, e.Sessions, "alice", tc.s.ID))
			if ran := queries.Load() - before; ran != tc.queries && (tc.queries != -1 || ran < 2) {
				t.Errorf("%d queries, want %d (-1: more than one)", ran, tc.queries)
			}
			if tc.docs > 0 && n != tc.docs {
				t.Errorf("purge reported %d documents, want %d", n, tc.docs)
			}
			if left := countUnder(t, client, tc.s.ID); left != 0 {
				t.Errorf("%d documents left", left)
			}
			units := storetest.Must[[]recall.Hit](t)(db.Nearest(ctx, recall.Query{UserID: "alice", SessionID: tc.s.ID, Vector: []float32{1, 0}, K: 10}))
			if len(units) != 0 {
				t.Errorf("%d units of search left", len(units))
			}
		})
	}
}
