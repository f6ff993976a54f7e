package firestoredb

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// TestMigrate: what earlier versions stored is refused until the
// migration ran (a context in an earlier layout is not read as empty),
// and then is as this version stores it: each context in a tail document (from
// one "tail" document, or a head, a summary and pages; those deleted), each
// unit with its session's title, each user's list with their archived
// sessions; a second run changes nothing.
func TestMigrate(t *testing.T) {
	client, _ := emulatortest.Firestore(t)
	ctx := context.Background()
	db := New(client)
	ss := sessions.NewService(db, "gpt-4o-mini")
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	hs := history.NewService(db, tok)
	layouts := []struct {
		name  string
		first int // the first message the earlier layout's tail holds
		write func(c *firestore.CollectionRef, msgs []tailMsgDoc) error
	}{
		{"tail", 0, func(c *firestore.CollectionRef, msgs []tailMsgDoc) error {
			_, err := c.Doc(legacyTailDocID).Set(ctx, map[string]any{"userId": "alice", "compactingUntil": time.Time{}, "messages": msgs})
			return err
		}},
		{"pages", 1, func(c *firestore.CollectionRef, msgs []tailMsgDoc) error {
			// The first message left the tail (from 1) but stays on its page.
			for id, data := range map[string]map[string]any{
				legacyHeadDocID:    {"userId": "alice", "from": 1, "page": 1},
				legacySummaryDocID: {"userId": "alice"},
				legacyPageID(0):    {"userId": "alice", "page": 0, "messages": msgs[:2]},
				legacyPageID(1):    {"userId": "alice", "page": 1, "messages": msgs[2:]},
			} {
				if _, err := c.Doc(id).Set(ctx, data); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	earlier := map[string]int{} // session id → the first message its context holds
	for _, l := range layouts {
		s := must[*sessions.Session](t)(ss.Create(ctx, "alice", sessions.CreateInput{}))
		for _, text := range []string{"one", "two", "three"} {
			appendTo(t, hs, s, history.Draft{Role: history.RoleUser, Content: text})
		}
		_, tail := must2[*sessions.Session, *history.Tail](t)(db.ReadTail(ctx, s.ID))
		var msgs []tailMsgDoc // as an earlier version stored them
		for i := range tail.Messages {
			msgs = append(msgs, tailMsgDoc{ID: tail.Messages[i].ID, msgFields: toMsgFields(&tail.Messages[i])})
		}
		c := db.contextOf(s.ID)
		must[*firestore.WriteResult](t)(c.Doc(tailDocID).Delete(ctx))
		if err := l.write(c, msgs); err != nil {
			t.Fatal(err)
		}
		earlier[s.ID] = l.first
		if _, _, err := db.ReadTail(ctx, s.ID); errs.CodeOf(err) != errs.EINTERNAL {
			t.Fatalf("%s: an unmigrated context read: %v", l.name, err)
		}
	}

	// A unit stored before units carried titles, and a list from before it
	// held archived sessions.
	titled := must[*sessions.Session](t)(ss.Create(ctx, "alice", sessions.CreateInput{Title: "Trips"}))
	q := appendTo(t, hs, titled, history.Draft{Role: history.RoleUser, Content: "trains?"})[0]
	if err := db.SaveUnit(ctx, recall.Unit{UserID: "alice", SessionID: titled.ID, Model: "m", Vector: []float32{1, 0},
		Question: recall.Excerpt{ID: q.ID, Seq: q.Seq, Content: q.Content}, Bag: recall.BagOf(q.Content)}); err != nil {
		t.Fatal(err)
	}
	unit := db.unitsOf("alice").Doc(q.ID)
	legacy := db.legacyRecallOf(titled.ID).Doc("legacy1") // where an earlier version kept units
	must[*firestore.WriteResult](t)(legacy.Set(ctx, unitDoc{UserID: "alice", SessionID: titled.ID, Model: "m",
		Reply: excerptDoc{ID: "legacy1", Text: "by boat"}, Terms: []string{"boat"}, Has: has([]string{"boat"}), Len: 1}))
	must[*firestore.WriteResult](t)(unit.Update(ctx, []firestore.Update{{Path: "sessionTitle", Value: firestore.Delete}}))
	archived := must[*sessions.Session](t)(ss.Archive(ctx, "alice", must[*sessions.Session](t)(ss.Create(ctx, "alice", sessions.CreateInput{})).ID))
	must[*firestore.WriteResult](t)(db.deletedRef("alice").Update(ctx, []firestore.Update{{Path: "archived", Value: firestore.Delete}}))

	rep, err := db.Migrate(ctx, "", nil)
	if err != nil || rep.Sessions != 4 || rep.Contexts != 2 || rep.Units != 1 || rep.MovedUnits != 1 || rep.Lists != 1 {
		t.Fatalf("migration: %+v, %v", rep, err)
	}
	for id, first := range earlier {
		_, got, err := db.ReadTail(ctx, id)
		if err != nil || len(got.Messages) != 3-first || got.Messages[len(got.Messages)-1].Content != "three" {
			t.Fatalf("context after the migration: %+v, %v", got, err)
		}
		for _, doc := range legacyDocIDs() {
			if snap, err := db.contextOf(id).Doc(doc).Get(ctx); err == nil && snap.Exists() {
				t.Fatalf("%s is still there", doc)
			}
		}
	}
	if title, err := must[*firestore.DocumentSnapshot](t)(unit.Get(ctx)).DataAt("sessionTitle"); err != nil || title != "Trips" {
		t.Errorf("the unit's title: %v, %v", title, err)
	}
	if snap, err := legacy.Get(ctx); err == nil || snap.Exists() {
		t.Errorf("the unit of the earlier layout is still there: %v", err)
	}
	moved := must[recall.LexicalHits](t)(db.Lexical(ctx, recall.LexicalQuery{UserID: "alice", Terms: []string{"boat"}, PerTerm: 5}))
	if len(moved.Hits) != 1 || moved.Hits[0].Unit.SessionTitle != "Trips" || moved.Hits[0].Unit.Reply.Content != "by boat" {
		t.Errorf("the moved unit, searched: %+v", moved.Hits)
	}
	if v := must[recall.Visibility](t)(db.Visibility(ctx, "alice")); !slices.Equal(v.Archived, []string{archived.ID}) {
		t.Errorf("archived after the migration: %v", v.Archived)
	}
	if again, err := db.Migrate(ctx, "", nil); err != nil || again.Contexts+again.Units+again.MovedUnits+again.Lists != 0 || again.Sessions != 4 {
		t.Errorf("a second run: %+v, %v", again, err)
	}
}

// appendTo stores drafts as the next messages of s, as hs plans them.
func appendTo(t *testing.T, hs *history.Service, s *sessions.Session, drafts ...history.Draft) []history.Message {
	t.Helper()
	plan := must[history.Plan](t)(hs.Prepare(s, "", drafts...))
	return must[*history.Appended](t)(hs.Store.Append(context.Background(), s.ID, "", plan)).Messages
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func must2[A, B any](t *testing.T) func(A, B, error) (A, B) {
	return func(a A, b B, err error) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}
