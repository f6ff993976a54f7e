package systemtest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/app"
)

// TestTurnLimitExact: a turn reads a few of the user's turn slots, and all
// of them only when those it read are taken; the limit stays exact: 20
// turns in a minute pass, the 21st is 429, and each turn commits once.
func TestTurnLimitExact(t *testing.T) { onBothStores(t, testTurnLimitExact) }

func testTurnLimitExact(t *testing.T, backend string) {
	h := newHarnessOn(t, backend, func(c *app.Config) { c.TurnsPerMinute = 20 })
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "limits"})
	for i := range 20 {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": fmt.Sprint("turn ", i)}).want(t, 200)
	}
	if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "one too many"}); r.status != 429 || r.errorCode() != "rate_limited" {
		t.Fatalf("the 21st turn in a minute: %d %s", r.status, r.body)
	}
	if all := h.listing(alice.token, id, "all"); len(all) != 40 {
		t.Errorf("%d messages stored, want 40", len(all))
	}
}

// TestSearchLimits: a spent day refuses a search with 429 and Retry-After
// before its query is embedded (the spend does not move); a full minute of
// searches is refused until the next, shown in /usage; the callable the
// same; a malformed search is refused without counting.
func TestSearchLimits(t *testing.T) { onBothStores(t, testSearchLimits) }

func testSearchLimits(t *testing.T, backend string) {
	h := newHarnessOn(t, backend, func(c *app.Config) {
		c.Embeddings, c.SearchesPerMinute, c.TokensPerDay = true, 3, 1_000_000
	})
	alice := h.signUp()
	search := func(token string) response { return h.do("GET", "/search?q=boats", token, nil) }
	h.do("GET", "/search?q=", alice.token, nil).want(t, 400)
	for range 3 {
		search(alice.token).want(t, 200)
	}
	r := search(alice.token)
	if r.status != 429 || r.errorCode() != "rate_limited" || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "searches per minute") {
		t.Fatalf("the 4th search in a minute: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/callable/search", alice.token, map[string]any{"data": map[string]any{"q": "boats"}}); r.status != 429 || !strings.Contains(string(r.body), "RESOURCE_EXHAUSTED") {
		t.Errorf("the callable in a full minute: %d %s", r.status, r.body)
	}
	var u struct{ Searches, Tokens gauge }
	h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &u)
	if u.Searches.Used != 3 || u.Searches.Limit != 3 {
		t.Errorf("usage: %+v", u)
	}
	h.clock.Advance(time.Minute)
	search(alice.token).want(t, 200)

	// A spent day: nothing more is embedded or charged.
	bob := h.signUp()
	id := h.newSession(bob.token, map[string]any{"title": "spend"})
	h.turn(bob.token, map[string]any{"sessionId": id, "message": strings.Repeat("many words ", 400)})
	h.idle()
	h.app.Chat.Limits.TokensPerDay = 1
	var before, after struct{ Tokens gauge }
	h.do("GET", "/usage", bob.token, nil).want(t, 200).decode(t, &before)
	for range 5 {
		if r := search(bob.token); r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "daily token limit") {
			t.Fatalf("a search on a spent day: %d %s", r.status, r.body)
		}
	}
	h.do("GET", "/usage", bob.token, nil).want(t, 200).decode(t, &after)
	if after.Tokens.Used != before.Tokens.Used {
		t.Errorf("searches on a spent day spent %d tokens", after.Tokens.Used-before.Tokens.Used)
	}
}
