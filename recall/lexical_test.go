package recall

import (
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

func TestFuse(t *testing.T) {
	got := fuse([]string{"a", "b", "c"}, []string{"c", "d"})
	if got[0] != "c" || !slices.Contains(got, "d") || len(got) != 4 {
		t.Errorf("fused %v: c is in both legs and first", got)
	}
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
