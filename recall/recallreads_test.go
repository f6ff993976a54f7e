package recall_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chatmemory/backend/recall"
)

// lexicalStore keeps the words queries asked of its store.
type lexicalStore struct {
	recall.Store
	mu   sync.Mutex
	asks []recall.LexicalQuery
}

func (s *lexicalStore) Lexical(ctx context.Context, q recall.LexicalQuery) (recall.LexicalHits, error) {
	s.mu.Lock()
	s.asks = append(s.asks, q)
	s.mu.Unlock()
	return s.Store.Lexical(ctx, q)
}

// TestRecallReadsBounded: a turn's recall reads at most 20 units a term
// of its message and 80 by words in all, a long message's terms sharing
// them; a word said once, among a long message's, is still recalled.
func TestRecallReadsBounded(t *testing.T) {
	w := newSearchWorld(t)
	store := &lexicalStore{Store: w.svc.Store}
	svc := &recall.Service{Embedder: topics{}, Store: store}
	ctx := context.Background()
	long := "pypdf wonderful mountains breakfast yesterday evening musicians northern painting gardening travellers bicycles"
	for _, tc := range []struct {
		name, text   string
		terms, per   int
		wantRecalled string
	}{
		{"one term", "pypdf", 1, 20, "PDFs"},
		{"four terms", "pypdf reading library files", 4, 20, "PDFs"},
		{"eight terms", strings.Join(strings.Fields(long)[:8], " "), 8, 10, "PDFs"},
		{"twelve terms", long, 12, 6, "PDFs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.asks = nil
			v, err := svc.EmbedQuery(ctx, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := svc.Recall(ctx, w.ferries, tc.text, v, recall.Scope{All: true}, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(store.asks) != 1 {
				t.Fatalf("%d words queries, want 1", len(store.asks))
			}
			q := store.asks[0]
			if len(q.Terms) != tc.terms || q.PerTerm != tc.per || q.PerTerm*len(q.Terms) > 80 {
				t.Errorf("%d terms, %d units each; want %d, %d, at most 80 in all", len(q.Terms), q.PerTerm, tc.terms, tc.per)
			}
			var titles []string
			for _, x := range got {
				titles = append(titles, x.SessionTitle)
			}
			if len(titles) == 0 || titles[0] != tc.wantRecalled {
				t.Errorf("recalled %v, want %s first", titles, tc.wantRecalled)
			}
		})
	}
}
