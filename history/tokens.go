package history

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts the tokens a message costs in a model's context. It is
// called once per message, when the message is written.
type Counter interface {
	Count(model string, m *Message) int
}

// Per-message overheads of OpenAI's chat format (as in OpenAI's cookbook for
// the gpt-3.5/gpt-4/gpt-4o families): every message is wrapped in a few
// tokens, a name costs one more, and the reply is primed with three.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	tokensPerTool    = 3
	// ReplyPriming is what every request adds once for the reply to start.
	ReplyPriming = 3
)

// TikToken counts tokens with tiktoken's BPE files, which are compiled into
// the binary (nothing is downloaded at run time).
type TikToken struct {
	encs map[string]*chunked // read-only after construction
}

var loaderOnce sync.Once

// NewTikToken loads the o200k_base and cl100k_base encodings.
func NewTikToken() (*TikToken, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	t := &TikToken{encs: map[string]*chunked{}}
	for _, name := range []string{tiktoken.MODEL_O200K_BASE, tiktoken.MODEL_CL100K_BASE} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			return nil, fmt.Errorf("history: load tiktoken encoding %s: %w", name, err)
		}
		t.encs[name] = &chunked{enc: enc, counts: map[string]int{}}
	}
	return t, nil
}

// Count returns the tokens m costs in a chat request for model.
func (t *TikToken) Count(model string, m *Message) int {
	n := tokensPerMessage + t.Text(model, string(m.Role)) + t.Text(model, m.Content)
	if m.Name != "" {
		n += tokensPerName + t.Text(model, m.Name)
	}
	for _, c := range m.ToolCalls {
		n += tokensPerTool + t.Text(model, c.Function.Name) + t.Text(model, c.Function.Arguments)
	}
	if m.ToolCallID != "" {
		n += t.Text(model, m.ToolCallID)
	}
	return n + PartTokens(m.Attachments)
}

// PartTokens is what parts add to their message's prompt: each one's
// Tokens, or its label's for an image sent as its name.
func PartTokens(parts []Part) int {
	n := 0
	for i := range parts {
		if parts[i].Omitted {
			n += labelTokens(&parts[i])
		} else {
			n += parts[i].Tokens
		}
	}
	return n
}

// Text counts the tokens of a string alone, in time linear in its length.
func (t *TikToken) Text(model, s string) int {
	if s == "" {
		return 0
	}
	return countLinear(t.encs[EncodingFor(model)].count, s)
}

// EncodingFor names the encoding of a model: o200k_base for the gpt-4o
// generation and everything unknown, cl100k_base for gpt-4 and gpt-3.5.
func EncodingFor(model string) string {
	m := strings.ToLower(model)
	if strings.HasPrefix(m, "gpt-4o") || strings.HasPrefix(m, "gpt-4.") {
		return tiktoken.MODEL_O200K_BASE
	}
	if strings.HasPrefix(m, "gpt-4") || strings.HasPrefix(m, "gpt-3.5") || strings.HasPrefix(m, "text-embedding") {
		return tiktoken.MODEL_CL100K_BASE
	}
	return tiktoken.MODEL_O200K_BASE
}

// MaxRun is the longest run of characters of one kind (white space, or
// anything else) that reaches the tokenizer in one piece.
//
// tiktoken splits text into pieces (words, numbers, runs of punctuation or
// white space) and merges each piece's bytes pair by pair, in time
// quadratic in the piece's length: one 32 KiB "word" of letters, CJK or
// emoji took about a second. Ordinary text has no run anywhere near MaxRun
// bytes and is counted exactly, in one call. A longer run is cut every
// MaxRun bytes and the parts are counted apart; near a cut the parts may
// tokenize differently from the whole, so one token is added per cut. The
// count is exact or slightly over (over-counting only makes a context
// leave more room), never under, and the work per byte is bounded by
// MaxRun whatever the text.
const MaxRun = 128

// countLinear counts s with count, cutting runs longer than MaxRun.
func countLinear(count func(string) int, s string) int {
	n, cuts, start, runStart := 0, 0, 0, 0
	prevSpace := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		switch {
		case i == 0 || space != prevSpace:
			runStart = i
		case i-runStart >= MaxRun:
			n += count(s[start:i])
			start, runStart = i, i
			cuts++
		}
		prevSpace = space
	}
	return n + count(s[start:]) + cuts
}

// chunked counts text with an encoding as the sum of its chunks' counts,
// and remembers the counts of short chunks (words, mostly), so that a
// word seen before costs a map lookup instead of tiktoken's regular
// expression, which took most of the time of counting a message.
//
// Text is cut before every space (U+0020) that follows a character other
// than white space. The sum is exact: tiktoken's pieces never span such a
// place (a word, a number or a run of punctuation never takes in a space
// after it; only white space does, and the character before is not), and
// its pattern never looks behind, so the text after the cut splits into
// the same pieces alone as within the whole (TestChunksAddUp).
type chunked struct {
	enc    *tiktoken.Tiktoken
	mu     sync.Mutex
	counts map[string]int // chunk → its tokens
}

// Chunks longer than maxChunk bytes are counted, not remembered; at most
// maxChunks are remembered (then the memory starts over).
const (
	maxChunk  = 32
	maxChunks = 1 << 16
)

func (c *chunked) count(s string) int {
	n, start := 0, 0
	for i := 1; i < len(s); i++ {
		if s[i] != ' ' {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); unicode.IsSpace(r) {
			continue
		}
		n += c.chunk(s[start:i])
		start = i
	}
	return n + c.chunk(s[start:])
}

func (c *chunked) chunk(s string) int {
	if len(s) > maxChunk {
		return len(c.enc.EncodeOrdinary(s))
	}
	c.mu.Lock()
	n, ok := c.counts[s]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = len(c.enc.EncodeOrdinary(s))
	c.mu.Lock()
	if len(c.counts) >= maxChunks {
		c.counts = map[string]int{}
	}
	c.counts[strings.Clone(s)] = n
	c.mu.Unlock()
	return n
}
