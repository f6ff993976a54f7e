package history

import (
	"math/rand"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTikToken(t *testing.T) {
	tok, err := NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model, text string
		want        int
	}{
		{"gpt-4o", "hello world", 2},
		{"gpt-4", "hello world", 2},
		{"gpt-4o", "", 0},
		{"gpt-4", "antidisestablishmentarianism", 6},
	}
	for _, c := range cases {
		if got := tok.Text(c.model, c.text); got != c.want {
			t.Errorf("Text(%s, %q) = %d, want %d", c.model, c.text, got, c.want)
		}
	}
	m := &Message{Role: RoleUser, Content: "hello world"}
	if got, want := tok.Count("gpt-4o", m), tokensPerMessage+1+2; got != want {
		t.Errorf("Count = %d, want %d (overhead + role + content)", got, want)
	}
	withCall := &Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Function: FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}}}}
	if got := tok.Count("gpt-4o", withCall); got <= tokensPerMessage+tokensPerTool {
		t.Errorf("tool call counted as %d tokens", got)
	}
	for model, enc := range map[string]string{"gpt-4o-mini": "o200k_base", "gpt-4.1": "o200k_base", "gpt-4": "cl100k_base", "gpt-3.5-turbo": "cl100k_base", "llama3": "o200k_base"} {
		if got := EncodingFor(model); got != enc {
			t.Errorf("EncodingFor(%s) = %s, want %s", model, got, enc)
		}
	}
}

// pathological are texts of 32 KiB that tiktoken alone counts in time
// quadratic in their length, and ordinary text of the same size.
func pathological() map[string]string {
	r := rand.New(rand.NewSource(1))
	letters := make([]byte, 32<<10)
	for i := range letters {
		letters[i] = byte('a' + r.Intn(26))
	}
	words := strings.Fields("the quick brown fox jumps over the lazy dog while seven wizards quietly hex jolly numbers, 42 times.")
	var prose strings.Builder
	for prose.Len() < 32<<10 {
		prose.WriteString(words[r.Intn(len(words))] + " ")
	}
	return map[string]string{
		"prose":    prose.String()[:32<<10],
		"repeated": strings.Repeat("ab", 16<<10),
		"random":   string(letters),
		"cjk":      strings.Repeat("漢字かな", 32<<10/12),
		"emoji":    strings.Repeat("😀🎉", 32<<10/8),
		"spaces":   strings.Repeat(" ", 32<<10),
		"digits":   strings.Repeat("0123456789", 32<<10/10),
	}
}

// TestLongRunsAreCut: no call of the encoder sees a run of one kind of
// character longer than MaxRun bytes (plus the last character), so no
// text costs quadratic time.
func TestLongRunsAreCut(t *testing.T) {
	for name, text := range pathological() {
		longest := 0
		spy := func(s string) int {
			run, prev := 0, -1
			for i, r := range s {
				sp := 0
				if unicode.IsSpace(r) {
					sp = 1
				}
				if sp != prev {
					run = i
				}
				prev = sp
				longest = max(longest, i+utf8.RuneLen(r)-run)
			}
			return len(s) / 4
		}
		countLinear(spy, text)
		if longest > MaxRun+4 {
			t.Errorf("%s: the encoder was given a run of %d bytes (MaxRun %d)", name, longest, MaxRun)
		}
	}
}

// TestChunksAddUp: counting text as the sum of its chunks (cut before
// every space that follows anything but white space) is tiktoken's count
// of the whole, exactly, in both encodings: on random mixes of words,
// contractions, numbers, punctuation, slashes, marks and every kind of
// white space, and a second time from remembered chunks.
func TestChunksAddUp(t *testing.T) {
	tok, err := NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	alphabet := []string{"a", "Word", "ABC", "é", "\u0301", "漢字", "😀", " ", "  ", "\u00a0", "\u3000", "\n", "\r\n", "\t",
		"12", "3456", ".", ",", "/", "'s", "'T", "'ll", "-", "\"", "(", "?!"}
	r := rand.New(rand.NewSource(11))
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		c := tok.encs[name]
		for i := 0; i < 2000; i++ {
			var b strings.Builder
			for n := r.Intn(40); n >= 0; n-- {
				b.WriteString(alphabet[r.Intn(len(alphabet))])
			}
			s := b.String()
			want := len(c.enc.EncodeOrdinary(s))
			if got := c.count(s); got != want {
				t.Fatalf("%s: %q counted %d in chunks, %d whole", name, s, got, want)
			}
			if got := c.count(s); got != want {
				t.Fatalf("%s: %q counted %d from remembered chunks, %d whole", name, s, got, want)
			}
		}
	}
}

// TestTextNeverUndercounts compares the linear count with tiktoken's exact
// count on texts with long runs of every kind: it may be over, never under,
// and ordinary text is counted exactly.
func TestTextNeverUndercounts(t *testing.T) {
	tok, err := NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	alphabet := []string{"a", "b", "Z", "é", "漢", "か", "😀", "🎉", " ", "\n", "\t", "1", "9", ".", "/", "'", "-", "'s", "ab"}
	r := rand.New(rand.NewSource(7))
	var texts []string
	for i := 0; i < 300; i++ {
		var b strings.Builder
		for b.Len() < 200+r.Intn(1200) {
			piece := alphabet[r.Intn(len(alphabet))]
			b.WriteString(strings.Repeat(piece, 1+r.Intn(3)*r.Intn(150)))
		}
		texts = append(texts, b.String())
	}
	for _, s := range pathological() {
		texts = append(texts, s[:4096]) // exact counting of the whole is slow
	}
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		enc := tok.encs[EncodingFor(model)].enc
		for _, s := range texts {
			exact := len(enc.EncodeOrdinary(s))
			if got := tok.Text(model, s); got < exact {
				t.Fatalf("%s: counted %d tokens, tiktoken counts %d, for %q", model, got, exact, s)
			}
		}
		prose := pathological()["prose"]
		if got, want := tok.Text(model, prose), len(enc.EncodeOrdinary(prose)); got != want {
			t.Errorf("%s: ordinary text counted %d tokens, want exactly %d", model, got, want)
		}
	}
}

// BenchmarkText counts 32 KiB of each kind of text: first with no chunk
// remembered (the chunks' memory cleared before each count), then again.
// Pathological text (runs tiktoken would merge in quadratic time) must
// stay at a few milliseconds, as prose cost before its words were
// remembered.
func BenchmarkText(b *testing.B) {
	tok, err := NewTikToken()
	if err != nil {
		b.Fatal(err)
	}
	texts := pathological()
	for _, name := range []string{"prose", "repeated", "random", "cjk", "emoji", "spaces", "digits"} {
		for _, again := range []bool{false, true} {
			label := name
			if again {
				label += ",again"
			}
			b.Run(label, func(b *testing.B) {
				b.SetBytes(int64(len(texts[name])))
				for b.Loop() {
					if !again {
						b.StopTimer()
						tok.encs["o200k_base"].counts = map[string]int{}
						b.StartTimer()
					}
					tok.Text("gpt-4o", texts[name])
				}
			})
		}
	}
}
