package firestoredb_test

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestStoredShape pins the stored form of the domain values a document
// holds as they are (metadata, context settings, branches, message
// metadata, profile fields, fact sources): field names and value types,
// as security rules, indexes and documents already stored expect them.
func TestStoredShape(t *testing.T) {
	ctx := context.Background()
	db, client := open(t)
	e := storetest.NewEnv(t, db)
	s := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", sessions.CreateInput{
		Metadata: sessions.Metadata{AgentType: "a", Topic: "t", Tags: []string{"x"}, Custom: map[string]string{"k": "v"}},
		Context:  sessions.ContextSettings{Strategy: sessions.StrategyWindow, WindowExchanges: 3, BudgetTokens: 1000},
	}))
	msgs := storetest.Must[[]history.Message](t)(e.Append(ctx, s, "", history.Draft{Role: history.RoleUser, Content: "hi"},
		history.Draft{Role: history.RoleAssistant, Content: "hello", Metadata: history.MessageMetadata{Model: "m", DurationMs: 5}}))
	storetest.Must[*sessions.Session](t)(db.UpdateSession(ctx, s.ID, func(s *sessions.Session) error {
		s.Branches = &sessions.Branches{Leaf: 1, Forks: []sessions.Fork{{Seq: 1, Parent: -1}}}
		return nil
	}))
	u := storetest.Must[*longterm.User](t)(db.GetUser(ctx, "alice"))
	u.Profile.Work = longterm.ProfileField{Text: "Engineer", UpdatedAt: &storetest.Epoch, SessionID: s.ID}
	u.Facts = []longterm.Fact{{ID: "f1", Content: "c", Category: longterm.CategoryPersonal, Confidence: 0.9,
		Sources: []longterm.Source{{SessionID: s.ID, StartSeq: 0, EndSeq: 1}}, CreatedAt: storetest.Epoch, LastConfirmedAt: storetest.Epoch}}
	if err := db.SaveMemory(ctx, "alice", 0, u, longterm.Change{}); err != nil {
		t.Fatal(err)
	}

	type m = map[string]any
	session := storetest.Must[m](t)(data(ctx, client.Collection(firestoredb.SessionsCollection).Doc(s.ID)))
	message := storetest.Must[m](t)(data(ctx, client.Collection(firestoredb.SessionsCollection).Doc(s.ID).Collection(firestoredb.MessagesCollection).Doc(msgs[1].ID)))
	userRef := client.Collection(firestoredb.UsersCollection).Doc(firestoredb.UserDocID("alice"))
	user := storetest.Must[m](t)(data(ctx, userRef))
	live := storetest.Must[m](t)(data(ctx, userRef.Collection(firestoredb.MemoryCollection).Doc("facts")))
	if _, inline := user["facts"]; inline {
		t.Errorf("the memory document holds the live facts; they have a document of their own")
	}
	work, _ := user["work"].(m)
	facts, _ := live["facts"].([]any)
	var sources any
	if len(facts) == 1 {
		sources = facts[0].(m)["sources"]
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"session memory", session["memory"], m{"strategy": "window", "windowExchanges": int64(3), "budgetTokens": int64(1000)}},
		{"session metadata", session["metadata"], m{"agentType": "a", "topic": "t", "tags": []any{"x"}, "custom": m{"k": "v"}}},
		{"session branches", session["branches"], m{"leaf": int64(1), "forks": []any{m{"seq": int64(1), "parent": int64(-1)}}}},
		{"message metadata", message["metadata"], m{"model": "m", "durationMs": int64(5)}},
		{"profile field keys", slices.Sorted(maps.Keys(work)), []string{"sessionId", "text", "updatedAt"}},
		{"profile field text", work["text"], "Engineer"},
		{"fact sources", sources, []any{m{"sessionId": s.ID, "startSeq": int64(0), "endSeq": int64(1)}}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s stored as %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
}

// data reads a document's raw fields.
func data(ctx context.Context, ref *firestore.DocumentRef) (map[string]any, error) {
	snap, err := ref.Get(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Data(), nil
}
