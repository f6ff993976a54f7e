package firestoredb_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestPurgeDeletesUnitsByName: a purge deletes every unit of search its
// session's messages may name, whether each exists or not, by name in
// plain commits: no query, and no BulkWriter's conditional deletes (their
// requests of 20 were most of a purge's time). Under a recall marker an
// earlier version wrote, it deletes them where units were kept before
// (under the session) too, five deletes more for five messages; under
// this version's, not. The units of the user's other session stay. It
// counts the documents it knew to exist: the units, deleted unseen, are
// not among them.
func TestPurgeDeletesUnitsByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	methods := map[string]int{}
	counter := &firestoretest.Counter{OnCall: func(method string) {
		mu.Lock()
		methods[method[strings.LastIndexByte(method, '/')+1:]]++
		mu.Unlock()
	}}
	client, _ := emulatortest.FirestoreWith(t, func(ctx context.Context, project string) (*firestore.Client, error) {
		return firestoretest.Dial(ctx, project, counter)
	})
	db := firestoredb.New(client)
	e := storetest.NewEnv(t, db)
	kept := e.NewSession(t, "alice")
	saveUnits(t, db, kept, e.Say(t, kept, history.RoleUser, "a question of a session that stays"))
	deletes := map[bool]int64{}
	for _, earlier := range []bool{true, false} {
		s := e.NewSession(t, "alice")
		var said []history.Message
		for _, line := range []string{"question one", "answer one", "question two", "answer two", "a question left alone"} {
			role := history.RoleUser
			if strings.HasPrefix(line, "answer") {
				role = history.RoleAssistant
			}
			said = append(said, e.Say(t, s, role, line))
		}
		saveUnits(t, db, s, said[0])          // the first question, indexed before its reply came
		saveUnits(t, db, s, said[0], said[1]) // then with it
		saveUnits(t, db, s, said[4])          // a lone question
		session := client.Collection(firestoredb.SessionsCollection).Doc(s.ID)
		legacy := session.Collection(firestoredb.RecallCollection)
		if earlier { // its marker as an earlier version wrote it, and a unit where it kept them
			storetest.Must[*firestore.WriteResult](t)(session.Collection(firestoredb.ContextCollection).Doc("recall").Set(ctx, map[string]any{"userId": "alice"}))
			storetest.Must[*firestore.WriteResult](t)(legacy.Doc(said[3].ID).Set(ctx, map[string]any{"userId": "alice", "sessionId": s.ID, "reply": map[string]any{"text": "answer two"}}))
		}
		storetest.Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
		mu.Lock()
		clear(methods)
		mu.Unlock()
		before := counter.Snapshot()
		n := storetest.Must[int](t)(storetest.PurgeAs(ctx, e.Sessions, "alice", s.ID))
		deletes[earlier] = counter.Snapshot().Sub(before).Deletes
		mu.Lock()
		if methods["BatchWrite"] != 0 || methods["RunQuery"] != 0 {
			t.Errorf("the purge's round trips %v: want no BatchWrite (conditional deletes) and no query", methods)
		}
		mu.Unlock()
		if want := len(said) + 3; n != want { // the messages, the tail document, the recall marker, the session
			t.Errorf("purge reported %d documents, want %d", n, want)
		}
		hits := storetest.Must[[]recall.Hit](t)(db.Nearest(ctx, recall.Query{UserID: "alice", SessionID: s.ID, Vector: []float32{1, 0}, K: 10}))
		if len(hits) != 0 {
			t.Errorf("%d units of the purged session left", len(hits))
		}
		if left := storetest.Must[[]*firestore.DocumentSnapshot](t)(legacy.Documents(ctx).GetAll()); len(left) != 0 {
			t.Errorf("%d units left under the purged session", len(left))
		}
	}
	if n := storetest.Must[int](t)(db.CountUnits(ctx, "alice")); n != 1 {
		t.Errorf("alice has %d units, want 1 (her other session's)", n)
	}
	if d := deletes[true] - deletes[false]; d != 5 {
		t.Errorf("a purge under an earlier marker made %d deletes, under this version's %d: want 5 more", deletes[true], deletes[false])
	}
}

// saveUnits indexes an exchange of s: a question alone, or a question and
// its reply.
func saveUnits(t *testing.T, db *firestoredb.DB, s *sessions.Session, q history.Message, reply ...history.Message) {
	t.Helper()
	excerpt := func(m history.Message) recall.Excerpt {
		return recall.Excerpt{ID: m.ID, Seq: m.Seq, Content: m.Content, CreatedAt: m.CreatedAt}
	}
	u := recall.Unit{UserID: s.UserID, SessionID: s.ID, Question: excerpt(q), Model: "m", Vector: []float32{1, 0}}
	if len(reply) > 0 {
		u.Reply = excerpt(reply[0])
	}
	if err := db.SaveUnit(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}
