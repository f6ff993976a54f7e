package systemtest_test

import (
	"math"
	"strings"
	"testing"

	"github.com/chatmemory/backend/chat"
)

// TestCachedTokens: the test model serves a prompt's prefix it saw in a
// recent request from its cache (from 1,024 tokens, in steps of 128, as
// OpenAI does); a turn reads cached_tokens from the reply's usage (whole
// and streamed), stores it with the session's usage (cached and uncached
// prompt tokens) and with the day's spend by model, and GET /usage shows
// them with dollars at the model's list price. Every turn names its
// session to the cache (prompt_cache_key). Both stores.
func TestCachedTokens(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice := h.signUp()
		id := h.newSession(alice.token, map[string]any{"title": "long"})
		long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 150) // 1,350 words
		type usage struct {
			PromptTokens         int `json:"promptTokens"`
			CachedPromptTokens   int `json:"cachedPromptTokens"`
			UncachedPromptTokens int `json:"uncachedPromptTokens"`
		}
		var s struct{ Usage usage }
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "first " + long})
		h.idle()
		h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).decode(t, &s)
		if s.Usage.PromptTokens < 1024 || s.Usage.CachedPromptTokens != 0 || s.Usage.UncachedPromptTokens != s.Usage.PromptTokens {
			t.Fatalf("after a first turn, nothing is cached: %+v", s.Usage)
		}
		first := s.Usage
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "second " + long})
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "third", "stream": true}).want(t, 200)
		h.idle()
		h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).decode(t, &s)
		cached := s.Usage.CachedPromptTokens
		// The second turn shares at least the first message with the first
		// (1,350 words), the third the first exchange and the second message.
		if cached < 3*1350 || cached%128 != 0 || s.Usage.UncachedPromptTokens != s.Usage.PromptTokens-cached || cached >= s.Usage.PromptTokens-first.PromptTokens {
			t.Errorf("after three turns: %+v", s.Usage)
		} else {
			t.Logf("after three turns: %+v", s.Usage)
		}
		var u struct {
			Models  map[string]chat.ModelBill
			Dollars float64
		}
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &u)
		b, ok := u.Models["gpt-4o-mini"]
		if !ok || b.Cached != cached || b.Input != s.Usage.PromptTokens || b.Uncached != b.Input-b.Cached || b.Dollars == nil {
			t.Fatalf("/usage by model: %+v (the session: %+v)", u.Models, s.Usage)
		}
		want := (float64(b.Uncached)*0.15 + float64(b.Cached)*0.075 + float64(b.Output)*0.6) / 1e6
		if math.Abs(*b.Dollars-want) > 1e-9 || math.Abs(u.Dollars-want) > 1e-9 {
			t.Errorf("dollars %v (total %v), want %v", *b.Dollars, u.Dollars, want)
		}
		keys := map[string]bool{}
		for _, k := range h.model.CacheKeys() {
			keys[k] = true
		}
		if !keys[id] {
			t.Errorf("no request named the session to the cache: %v", keys)
		}
	})
}
