package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// testLexical: a lexical query finds, for each term, up to PerTerm of the
// user's units holding it (in one session when it names one), each unit
// once with its bag, and how many it found for each term (all that hold
// it, when fewer than PerTerm); with Any, up to PerTerm holding any term;
// never another user's.
func testLexical(t *testing.T, e *Env) {
	ctx := context.Background()
	store := e.DB.(recall.Store)
	save := func(s *sessions.Session, text string) {
		t.Helper()
		m := e.Say(t, s, history.RoleUser, text)
		noErr(t, store.SaveUnit(ctx, recall.Unit{UserID: s.UserID, SessionID: s.ID, Model: "test/2", Vector: []float32{1, 0},
			Question: recall.Excerpt{ID: m.ID, Seq: m.Seq, Content: text}, Bag: recall.BagOf(text)}))
	}
	one, two, bobs := e.NewSession(t, "alice"), e.NewSession(t, "alice"), e.NewSession(t, "bob")
	for i := range 3 {
		save(one, fmt.Sprintf("melanie painted sunrise %d", i))
	}
	save(two, "melanie went to the lake")
	save(bobs, "melanie lake sunrise")
	terms := recall.QueryTerms("melanie lake sunrise")
	for _, tc := range []struct {
		name  string
		q     recall.LexicalQuery
		hits  int
		found map[string]int
	}{
		{"per term, a page of 2", recall.LexicalQuery{UserID: "alice", Terms: terms, PerTerm: 2}, 3,
			map[string]int{terms[0]: 2, terms[1]: 1, terms[2]: 2}},
		{"one session", recall.LexicalQuery{UserID: "alice", SessionID: two.ID, Terms: terms, PerTerm: 2}, 1,
			map[string]int{terms[0]: 1, terms[1]: 1, terms[2]: 0}},
		{"per term, a page past them all", recall.LexicalQuery{UserID: "alice", Terms: terms, PerTerm: 10}, 4,
			map[string]int{terms[0]: 4, terms[1]: 1, terms[2]: 3}},
		{"any", recall.LexicalQuery{UserID: "alice", Terms: terms[1:], PerTerm: 10, Any: true}, 4,
			map[string]int{terms[1]: 1, terms[2]: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.Lexical(ctx, tc.q)
			noErr(t, err)
			if len(got.Hits) != tc.hits || fmt.Sprint(got.Found) != fmt.Sprint(tc.found) {
				t.Fatalf("%d hits, found %v; want %d, %v", len(got.Hits), got.Found, tc.hits, tc.found)
			}
			for _, h := range got.Hits {
				if h.Unit.UserID != "alice" || h.Unit.Bag.Len == 0 {
					t.Errorf("a hit: %+v", h.Unit)
				}
			}
		})
	}
}
