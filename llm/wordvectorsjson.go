package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// readPackage reads the package's JSON, an entry at a time: {"vectors":
// {word: [100 numbers, norm, index], …}, …}, where a word's index is its
// rank by frequency (the most frequent first). It scans the bytes itself:
// encoding/json's decoder took 9 s for the 300 MB, and 77 s under the
// race detector (what the first tests to load them paid on a fresh
// machine); this takes 2 s, and 12 s under it, reading the same words.
func readPackage(path string) (*WordVectors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &jsonScanner{r: f, buf: make([]byte, 1<<20)}
	wv := &WordVectors{index: map[string]int32{}}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	for {
		b, err := s.nonSpace()
		if err != nil {
			return nil, err
		}
		switch b {
		case '}':
			if len(wv.index) == 0 {
				return nil, errors.New("no words (is it the package's file?)")
			}
			return wv, nil
		case ',':
			continue
		case '"':
		default:
			return nil, s.unexpected(b)
		}
		key, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		if key == "vectors" {
			err = wv.readVectors(s)
		} else {
			err = s.skipValue()
		}
		if err != nil {
			return nil, err
		}
	}
}

// readVectors reads the "vectors" object, keeping the maxWords most
// frequent words, in that order.
func (wv *WordVectors) readVectors(s *jsonScanner) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	byRank := make([][]int8, maxWords)
	words := make([]string, maxWords)
	v := make([]float64, 0, wordDims+2)
	for {
		b, err := s.nonSpace()
		if err != nil {
			return err
		}
		if b == '}' {
			break
		}
		if b == ',' {
			continue
		}
		if b != '"' {
			return s.unexpected(b)
		}
		w, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if v, err = s.numbers(v[:0]); err != nil {
			return fmt.Errorf("the vector of %q: %w", w, err)
		}
		if len(v) < wordDims+2 || !isWord(w) {
			continue
		}
		if rank := int(v[wordDims+1]); rank >= 0 && rank < maxWords {
			byRank[rank], words[rank] = quantize(v[:wordDims]), w
		}
	}
	for r, row := range byRank {
		if row != nil {
			wv.index[words[r]] = int32(len(wv.rows) / wordDims)
			wv.rows = append(wv.rows, row...)
		}
	}
	return nil
}

// jsonScanner reads JSON a byte at a time from a buffer it refills.
type jsonScanner struct {
	r        io.Reader
	buf      []byte
	pos, end int
	err      error // the reader's, once it returned one
	scratch  []byte
}

// numbers reads an array of numbers into v. It scans them in the
// buffer (each byte once, no call a byte: the race detector makes every
// access costly), and refills it only when a number reaches its end.
func (s *jsonScanner) numbers(v []float64) ([]float64, error) {
	if err := s.expect('['); err != nil {
		return v, err
	}
	for {
		buf, p, end := s.buf, s.pos, s.end
		for p < end {
			c := buf[p]
			if c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' {
				p++
				continue
			}
			if c == ']' {
				s.pos = p + 1
				return v, nil
			}
			q := p
			for q < end && isNumberByte(buf[q]) {
				q++
			}
			if q == end {
				break // the number may go on in what is not read yet
			}
			if q == p {
				s.pos = p
				return v, s.unexpected(c)
			}
			x, err := parseNumber(buf[p:q])
			if err != nil {
				return v, err
			}
			v, p = append(v, x), q
		}
		s.pos = p
		if !s.fill() {
			return v, s.endErr()
		}
	}
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}

// skipValue reads past one value of any kind.
func (s *jsonScanner) skipValue() error {
	depth := 0
	for {
		b, err := s.nonSpace()
		if err != nil {
			return err
		}
		switch b {
		case '"':
			if _, err := s.str(); err != nil {
				return err
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',', ':':
		default: // a number, true, false or null: up to what ends it
			for b != ',' && b != '}' && b != ']' && b != ' ' && b != '\n' && b != '\r' && b != '\t' {
				if b, err = s.next(); err != nil {
					return err
				}
			}
			s.pos--
		}
		if depth == 0 {
			return nil
		}
	}
}

// str reads a string whose opening quote was read; escapes are decoded.
func (s *jsonScanner) str() (string, error) {
	s.scratch = append(s.scratch[:0], '"')
	escaped := false
	for {
		b, err := s.next()
		if err != nil {
			return "", err
		}
		s.scratch = append(s.scratch, b)
		switch {
		case b == '\\':
			escaped = true
			b, err = s.next()
			if err != nil {
				return "", err
			}
			s.scratch = append(s.scratch, b)
		case b == '"':
			if !escaped {
				return string(s.scratch[1 : len(s.scratch)-1]), nil
			}
			var out string
			err := json.Unmarshal(s.scratch, &out)
			return out, err
		}
	}
}

func (s *jsonScanner) expect(want byte) error {
	b, err := s.nonSpace()
	if err == nil && b != want {
		err = fmt.Errorf("%w where %q was expected", s.unexpected(b), want)
	}
	return err
}

func (s *jsonScanner) nonSpace() (byte, error) {
	for {
		b, err := s.next()
		if err != nil || (b != ' ' && b != '\n' && b != '\r' && b != '\t') {
			return b, err
		}
	}
}

// next is the next byte; at the end of the input, io.ErrUnexpectedEOF.
func (s *jsonScanner) next() (byte, error) {
	if s.pos >= s.end && !s.fill() {
		return 0, s.endErr()
	}
	b := s.buf[s.pos]
	s.pos++
	return b, nil
}

// fill reads more after what is left unread, which it moves to the
// buffer's start; false when nothing more comes (or no room is left).
func (s *jsonScanner) fill() bool {
	s.end = copy(s.buf, s.buf[s.pos:s.end])
	s.pos = 0
	for s.err == nil && s.end < len(s.buf) {
		n, err := s.r.Read(s.buf[s.end:])
		s.end, s.err = s.end+n, err
		if n > 0 {
			return true
		}
	}
	return false
}

func (s *jsonScanner) endErr() error {
	switch s.err {
	case nil:
		return errors.New("a number longer than the word vectors' read buffer")
	case io.EOF:
		return io.ErrUnexpectedEOF
	}
	return s.err
}

func (s *jsonScanner) unexpected(b byte) error {
	return fmt.Errorf("unexpected %q in the word vectors' JSON", b)
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber is strconv.ParseFloat(string(b), 64), without the string
// for a plain decimal of at most 15 digits (as the package's numbers
// are): its digits and the power of ten are exact in a float64, so one
// division rounds as ParseFloat does (the fast path it takes itself).
func parseNumber(b []byte) (float64, error) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	var mant uint64
	digits, exp, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if dot {
				exp--
			}
		case c == '.' && !dot:
			dot = true
		default:
			return strconv.ParseFloat(string(b), 64)
		}
		if digits > 15 {
			return strconv.ParseFloat(string(b), 64)
		}
	}
	if digits == 0 || -exp >= len(pow10) {
		return strconv.ParseFloat(string(b), 64)
	}
	x := float64(mant) / pow10[-exp]
	if neg {
		x = -x
	}
	return x, nil
}
