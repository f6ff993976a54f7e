package recall

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestTerms: stop words and lone letters are left out; the forms of a
// word are one term, in a unit as in a query; a rare word is kept.
func TestTerms(t *testing.T) {
	for _, tc := range []struct{ name, text, same string }{
		{"stop words out", "When was Jon in Rome?", "jon rome"},
		{"plurals and possessives", "The Thon hotels' cities, and LayerCake!", "thon hotel city layercake"},
		{"verb forms", "the kids started swimming lessons", "kid start swim lesson"},
		{"codes split at punctuation", "mooring 31-ALPHA, boxes and classes", "moor 31 alpha box class"},
		{"numbers kept, lone letters not", "a I the of 7", "7"},
		{"letters beyond ASCII", "Crème brûlée in Zürich", "crème brûlée zürich"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := Terms(tc.text), Terms(tc.same)
			if len(got) != len(splitWords(tc.same)) || !slices.Equal(got, want) {
				t.Errorf("Terms(%q) = %v, want %v", tc.text, got, want)
			}
		})
	}
}

func splitWords(s string) []string { return strings.Fields(s) }

// TestBM25: a rare term outweighs a common one, more occurrences score
// more, a longer unit with the same count scores less, a unit without the
// terms scores nothing.
func TestBM25(t *testing.T) {
	c := Corpus{N: 100, AvgLen: 10, DF: map[string]int{"rome": 1, "trip": 40}}
	terms := []string{"rome", "trip"}
	rare, common := BagOf("rome visit"), BagOf("trip visit")
	twice, long := BagOf("trip trip visit"), BagOf("trip "+repeat("word ", 40))
	if !(c.BM25(terms, rare) > c.BM25(terms, common)) {
		t.Errorf("rare %v <= common %v", c.BM25(terms, rare), c.BM25(terms, common))
	}
	if !(c.BM25(terms, twice) > c.BM25(terms, common)) || !(c.BM25(terms, long) < c.BM25(terms, common)) {
		t.Errorf("twice %v, once %v, long %v", c.BM25(terms, twice), c.BM25(terms, common), c.BM25(terms, long))
	}
	if s := c.BM25(terms, BagOf("nothing shared")); s != 0 {
		t.Errorf("no shared term scored %v", s)
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestPhrase(t *testing.T) {
	for q, want := range map[string]struct {
		phrase string
		quoted bool
	}{
		`"Thon hotels"`: {"Thon hotels", true},
		` "a b" `:       {"a b", true},
		`Thon hotels`:   {"Thon hotels", false},
		`"unterminated`: {`"unterminated`, false},
	} {
		if p, q2 := Phrase(q); p != want.phrase || q2 != want.quoted {
			t.Errorf("Phrase(%q) = %q, %v", q, p, q2)
		}
	}
	if !containsPhrase("We stayed at the THON   hotels in Oslo", "thon hotels") || containsPhrase("thon and hotels", "thon hotels") {
		t.Error("containsPhrase")
	}
}

func TestQueryTerms(t *testing.T) {
	if got := QueryTerms("When did Nate adopt Max? Nate!"); !slices.Equal(got, []string{"nate", "adopt", "max"}) {
		t.Errorf("QueryTerms: %v", got)
	}
	long := QueryTerms("one two three four five six seven eight nine ten eleven twelve thirteen extraordinarily")
	if len(long) != MaxQueryTerms || long[0] != Terms("extraordinarily")[0] {
		t.Errorf("QueryTerms of a long query: %v", long)
	}
}

// TestCorpusOf: BM25's document frequencies are those the store found
// (at most a page: a common term weighs as one held by a page of units);
// the number of units is the counted one, else ten times those found.
func TestCorpusOf(t *testing.T) {
	found := LexicalHits{Hits: make([]Hit, 4), Found: map[string]int{"melanie": 2, "sunrise": 2}}
	for _, tc := range []struct {
		name  string
		lex   LexicalHits
		units int
		want  Corpus
	}{
		{"counted units", found, 1000, Corpus{N: 1000, DF: found.Found}},
		{"no count of units", found, 0, Corpus{N: 40, DF: found.Found}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := corpusOf(tc.lex, tc.units)
			if got.N != tc.want.N || !maps.Equal(got.DF, tc.want.DF) {
				t.Errorf("corpus %+v, want %+v", got, tc.want)
			}
		})
	}
	term := Terms("melanie")[0]
	b := BagOf("melanie and melanie")
	common := Corpus{N: 1000, AvgLen: 2, DF: map[string]int{term: 900}}
	capped := Corpus{N: 1000, AvgLen: 2, DF: map[string]int{term: 40}} // as found, at most a page
	if c, f := common.BM25([]string{term}, b), capped.BM25([]string{term}, b); c <= 0 || c >= f/4 {
		t.Errorf("a term in 900 of 1000 units weighs %.2f, as if in 40 %.2f", c, f)
	}
}
