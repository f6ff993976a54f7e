package llmtest

import (
	"encoding/json"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// The server emulates OpenAI's prompt cache: a request's prompt is a run
// of tokens (the tools' definitions, then each message: 4 tokens of
// framing, its role, its name, its content, its tool calls), and the part
// served from the cache is the longest prefix it shares with one of the
// recent requests under the same prompt_cache_key (the last
// cacheDepth), counted from 1,024 tokens in steps of 128, as OpenAI
// reports it in usage.prompt_tokens_details.cached_tokens. Tokens are
// counted by the server's Counter (SetCounter; tiktoken in the benchmark),
// else as words (a token a word, as the usage the server reports
// without one counts them). A message that differs
// from its counterpart shares the tokens of its longest common prefix
// of whole words.

// Counter counts the tokens of a text, as history.TikToken does.
type Counter interface {
	Text(model, s string) int
}

// cacheDepth is how many recent requests per key the cache remembers.
const cacheDepth = 64

// The cache's rule: nothing under minCached tokens, then steps.
const (
	minCached  = 1024
	cachedStep = 128
)

// SetCounter counts prompts with c from now on (nil: words).
func (s *Server) SetCounter(c Counter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counter = c
}

// CacheKeys are the prompt_cache_key of each request received so far ("" for none).
func (s *Server) CacheKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// CacheUse is what the cache made of one request: its prompt_cache_key,
// its prompt's tokens (as counted for the cache) and the part of them it
// served.
type CacheUse struct {
	Key            string
	Prompt, Cached int
}

// CacheUses is what the cache made of each request received so far, in
// order (as Requests).
func (s *Server) CacheUses() []CacheUse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CacheUse(nil), s.uses...)
}

// prompt is a request's prompt as the cache sees it: its parts in order
// (the tools, then each message), each with its tokens.
type prompt struct {
	parts  []string
	tokens []int
	total  int
}

// promptOf renders req's prompt, counting with count.
func promptOf(req openai.ChatCompletionRequest, count func(string) int) prompt {
	var p prompt
	add := func(part string, n int) {
		p.parts, p.tokens, p.total = append(p.parts, part), append(p.tokens, n), p.total+n
	}
	if len(req.Tools) > 0 {
		b, _ := json.Marshal(req.Tools)
		add("tools:"+string(b), count(string(b)))
	}
	for _, m := range req.Messages {
		calls, _ := json.Marshal(m.ToolCalls)
		key := m.Role + "\x00" + m.Name + "\x00" + m.ToolCallID + "\x00" + string(calls) + "\x00" + m.Content
		n := 4 + count(m.Role) + count(m.Content)
		if m.Name != "" {
			n += count(m.Name)
		}
		if len(m.ToolCalls) > 0 {
			n += count(string(calls))
		}
		add(key, n)
	}
	p.total += 3 // the reply's priming
	return p
}

// shared is the tokens of the longest prefix p shares with q.
func (p prompt) shared(q prompt, count func(string) int) int {
	n := 0
	for i := 0; i < len(p.parts) && i < len(q.parts); i++ {
		if p.parts[i] == q.parts[i] {
			n += p.tokens[i]
			continue
		}
		a, b := p.parts[i], q.parts[i]
		j := 0
		for j < len(a) && j < len(b) && a[j] == b[j] {
			j++
		}
		// Back to the last whole word; the framing is not in the text.
		if k := strings.LastIndexFunc(a[:j], unicode.IsSpace); k > 0 {
			if _, content, ok := cutFields(a[:k]); ok {
				n += 4 + count(content)
			}
		}
		break
	}
	return n
}

// cutFields splits a part's key at its content (after its fourth NUL).
func cutFields(key string) (head, content string, ok bool) {
	i := 0
	for range 4 {
		j := strings.IndexByte(key[i:], 0)
		if j < 0 {
			return "", "", false
		}
		i += j + 1
	}
	return key[:i], key[i:], true
}

// cached is what OpenAI would report cached of p, given the recent
// prompts under its key: the longest prefix shared with one of them,
// from minCached tokens in steps of cachedStep.
func cached(p prompt, recent []prompt, count func(string) int) int {
	best := 0
	for _, q := range recent {
		best = max(best, p.shared(q, count))
	}
	best = min(best, p.total)
	if best < minCached {
		return 0
	}
	return minCached + (best-minCached)/cachedStep*cachedStep
}

// words counts s as the server does without a Counter: a token a word.
func words(s string) int { return len(strings.Fields(s)) }
