package llm

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// decodePackage reads the package as encoding/json does: what
// readPackage must give, byte for byte.
func decodePackage(t *testing.T, raw []byte) *WordVectors {
	t.Helper()
	var pkg struct{ Vectors map[string][]float64 }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	byRank := make([][]int8, maxWords)
	words := make([]string, maxWords)
	for w, v := range pkg.Vectors {
		if len(v) < wordDims+2 || !isWord(w) {
			continue
		}
		if rank := int(v[wordDims+1]); rank >= 0 && rank < maxWords {
			byRank[rank], words[rank] = quantize(v[:wordDims]), w
		}
	}
	wv := &WordVectors{index: map[string]int32{}}
	for r, row := range byRank {
		if row != nil {
			wv.index[words[r]] = int32(len(wv.rows) / wordDims)
			wv.rows = append(wv.rows, row...)
		}
	}
	return wv
}

// tricky is a package file with what JSON allows around the vectors:
// other keys before and after (strings with escaped quotes and brackets,
// nested values, literals), escaped words, numbers in every notation,
// short vectors and ranks past those kept, and spaces between tokens.
func tricky() string {
	vec := func(rank int, first string) string {
		nums := []string{first}
		for i := 1; i < wordDims; i++ {
			nums = append(nums, []string{"0.1", "-0.085806", "2.95153011", "1e-3", "-2.5E+1", "0", "-0", "0.12345678901234567", "7"}[i%9])
		}
		return "[" + strings.Join(nums, ", ") + ",\n 3.2 ," + fmt.Sprint(rank) + "]"
	}
	return `{ "precision" : 8, "words": ["the", "\"", "]", "a\\b", "}"], "nested": {"a": [1, {"b": null}], "c": true, "d": false},
	"vectors" : {
		"the": ` + vec(0, "0.43208") + `,
		"caf\u00e9": ` + vec(1, "-1.5") + `,
		"]": ` + vec(2, "1") + `,
		"\"": ` + vec(3, "1") + `,
		"short": [1, 2, 3],
		"rare": ` + vec(maxWords, "1") + `,
		"x\ny": ` + vec(4, "1") + `,
		"hut" :` + vec(5, "3.0e2") + `},
	"unkVector": [0, 0, -1], "size": 341479 }`
}

// TestReadPackage: the scanner reads what encoding/json reads, and a file
// cut short or not JSON is an error, not a panic.
func TestReadPackage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw := tricky()
	got, err := readPackage(write("pkg.json", raw))
	if err != nil {
		t.Fatal(err)
	}
	want := decodePackage(t, []byte(raw))
	if len(got.index) != 3 || len(want.index) != 3 { // the, café, hut
		t.Fatalf("words %v, want %v", got.index, want.index)
	}
	for w, row := range want.index {
		if got.index[w] != row || !slices.Equal(got.rows[row*wordDims:(row+1)*wordDims], want.rows[row*wordDims:(row+1)*wordDims]) {
			t.Errorf("%q: row %d %v, want %d %v", w, got.index[w], got.rows[got.index[w]*wordDims:][:4], row, want.rows[row*wordDims:][:4])
		}
	}
	for _, bad := range []string{raw[:len(raw)/2], raw[:len(raw)-1], `{"vectors": {"the": [1, 2,`, `{"vectors": [}`, `[]`, ``} {
		if _, err := readPackage(write("bad.json", bad)); err == nil {
			t.Errorf("%.40q…: no error", bad)
		}
	}
}

// TestParseNumber: the fast path gives ParseFloat's float64, bit for bit.
func TestParseNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "0.43208", "-0.085806", "2.95153011", "341478", "0.1", "0.3", "-123456.789012345",
		"1.0000000000000002", "0.12345678901234567", "1e-3", "-2.5E+1", "1e400", "0.000000000000000000000001"} {
		got, err := parseNumber([]byte(s))
		want, werr := strconv.ParseFloat(s, 64)
		if (err == nil) != (werr == nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%s: %v %v, want %v %v", s, got, err, want, werr)
		}
	}
}
