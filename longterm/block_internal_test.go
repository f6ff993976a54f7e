package longterm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/prompts"
)

// TestFitLinesIsTheLinearCut: fitLines cuts where adding lines one by one
// and counting the whole block each time does, on lines that end in
// punctuation, spaces and newlines (where BPE merges across the join),
// for both encodings and caps from tiny to large.
func TestFitLinesIsTheLinearCut(t *testing.T) {
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	count := func(s string) int { return blockTokens(tok, s) }
	linear := func(header string, lines []string, limit int) (string, int) {
		block, n := header, count(header)
		if n > limit {
			return "", 0
		}
		for _, l := range lines {
			cand := block + "\n" + l
			m := count(cand)
			if m > limit {
				break
			}
			block, n = cand, m
		}
		return block, n
	}
	ends := []string{".", "!", " ", "  ", ":", "\t", "'s", "…", "123", "日本", "- ", ""}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 400 {
		var lines []string
		for j := range r.IntN(40) {
			lines = append(lines, fmt.Sprintf("- fact %d %s%s", j, strings.Repeat("word ", r.IntN(12)), ends[r.IntN(len(ends))]))
		}
		limit := 5 + r.IntN(600)
		gotBlock, gotN, _ := fitLines(prompts.MemoryHeader, lines, limit, count)
		wantBlock, wantN := linear(prompts.MemoryHeader, lines, limit)
		if gotBlock != wantBlock || gotN != wantN {
			t.Fatalf("case %d (limit %d): cut at %d tokens, %q; the linear cut is %d, %q", i, limit, gotN, gotBlock, wantN, wantBlock)
		}
	}
}
