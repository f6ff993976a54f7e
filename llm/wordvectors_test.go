package llm_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/recall"
)

// writePackage writes word vectors as the npm package lays them out: the
// words most frequent first, and each word's 100 numbers, its norm and its
// index among them. cabin, hut and shed share a direction; lisbon and
// spring do not.
func writePackage(t *testing.T, dir string) string {
	t.Helper()
	words := []string{"the", ",", "spring", "mountain", "cabin", "hut", "shed", "lisbon"}
	vector := func(word string, i int, scale float64, also ...int) []float64 {
		v := make([]float64, 102)
		v[i] = scale
		for _, j := range also {
			v[j] = 0.3
		}
		for rank, w := range words {
			if w == word {
				v[101] = float64(rank)
			}
		}
		return v
	}
	vectors := map[string][]float64{
		"the": vector("the", 0, 1), ",": vector(",", 1, 1), "cabin": vector("cabin", 5, 2), "hut": vector("hut", 5, 1, 6),
		"shed": vector("shed", 5, 3, 7), "lisbon": vector("lisbon", 20, 1), "spring": vector("spring", 30, 1),
		"mountain": vector("mountain", 5, 1, 8),
	}
	raw, err := json.Marshal(map[string]any{"precision": 8, "dimensions": 100, "words": words, "vectors": vectors, "unkVector": make([]float64, 101)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "node_modules", filepath.FromSlash(llm.WordVectorsPackage))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWordVectors: the package is found from a folder below the one
// holding node_modules; its words load (letters only), and load again
// from the compact copy kept in the cache folder; a file that is not the
// package's is an error.
func TestWordVectors(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	repo := t.TempDir()
	path := writePackage(t, repo)
	below := filepath.Join(repo, "bench", "deeper")
	if err := os.MkdirAll(below, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := llm.FindWordVectors(below); got != path {
		t.Fatalf("found %q, want %q", got, path)
	}
	if got := llm.FindWordVectors(t.TempDir()); got != "" {
		t.Fatalf("found %q where there is none", got)
	}
	for _, run := range []string{"from the package", "from the cache"} {
		wv, err := llm.LoadWordVectors(path)
		if err != nil || wv.Words() != 7 { // "," is not a word
			t.Fatalf("%s: %v words, %v", run, wv, err)
		}
	}
	cached, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "chatmemory", "wordvectors-*.bin"))
	if len(cached) != 1 {
		t.Fatalf("cache files %v", cached)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"words": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.LoadWordVectors(bad); err == nil || !strings.Contains(err.Error(), "no words") {
		t.Errorf("a file with no words: %v", err)
	}
}

// TestLexicalWithWords: with word vectors the stand-in puts texts that
// say the same in other words near (nearer than without them), keeps texts
// that share words near, stays of unit length, and names itself apart.
func TestLexicalWithWords(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	wv, err := llm.LoadWordVectors(writePackage(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"the key of the cabin", "our mountain hut", "lisbon in spring", "the key of the cabin, again", "1234"}
	plain, _ := llm.Lexical{}.Embed(context.Background(), texts)
	with := llm.Lexical{Words: wv}
	vs, _ := with.Embed(context.Background(), texts)
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != llm.LexicalDimensions+100 || math.Abs(n-1) > 1e-5 {
			t.Fatalf("%q: length %d, norm² %v", texts[i], len(v), n)
		}
	}
	sim := func(vs [][]float32, i, j int) float64 { return 1 - recall.Cosine(vs[i], vs[j]) }
	if sim(vs, 0, 1) <= sim(plain, 0, 1)+0.2 || sim(vs, 0, 1) <= sim(vs, 0, 2) {
		t.Errorf("cabin ~ hut: %.2f with words, %.2f without; cabin ~ lisbon %.2f", sim(vs, 0, 1), sim(plain, 0, 1), sim(vs, 0, 2))
	}
	if sim(vs, 0, 3) < 0.9 {
		t.Errorf("texts sharing their words: %.2f", sim(vs, 0, 3))
	}
	if with.Model() == (llm.Lexical{}).Model() || !strings.HasPrefix(with.Model(), "lexical-stand-in/") {
		t.Errorf("models %q and %q", with.Model(), llm.Lexical{}.Model())
	}
}
