package functions_test

import (
	"fmt"
	"testing"

	"github.com/chatmemory/backend/functions"
)

// TestTurnLimitExact: a turn reads a few of the user's turn slots, and all
// of them only when those it read are taken; the limit stays exact: 20
// turns in a minute pass, the 21st is 429, and each turn commits once.
func TestTurnLimitExact(t *testing.T) { onBothStores(t, testTurnLimitExact) }

func testTurnLimitExact(t *testing.T, backend string) {
	h := newHarnessOn(t, backend, func(c *functions.Config) { c.TurnsPerMinute = 20 })
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
