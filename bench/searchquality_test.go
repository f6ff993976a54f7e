package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
)

// TestSearchQuality: on both parts of the search fixture, search with the
// offline stand-in finds the answer among the first 5 at least as often as
// plain BM25 over the same exchanges, and answers every word question (a
// rare word said once) and every entity question among the first 5. (Its
// paraphrase questions share no word with their answers: a lexical
// stand-in cannot find them, an embedding model can.)
func TestSearchQuality(t *testing.T) {
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	qs, err := MeasureSearch(context.Background(), llm.Lexical{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	WriteSearchQuality(&table, qs)
	t.Log("\n" + table.String())
	get := func(part, method string) *SearchQuality {
		for _, q := range qs {
			if q.Part == part && strings.HasPrefix(q.Method, method) {
				return q
			}
		}
		t.Fatalf("no %s %s", part, method)
		return nil
	}
	for _, part := range []string{"dev", "held-out"} {
		search, base := get(part, "search"), get(part, "BM25")
		if search.Queries < 30 || search.Exchanges < 250 {
			t.Errorf("%s: %d questions over %d exchanges", part, search.Queries, search.Exchanges)
		}
		if search.At5 < base.At5 || search.ByKind["word"] < 1 || search.ByKind["entity"] < 1 {
			t.Errorf("%s: search recall@5 %.2f (word questions %.2f), BM25 %.2f", part, search.At5, search.ByKind["word"], base.At5)
		}
	}
}
