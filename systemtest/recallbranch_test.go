package systemtest_test

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
)

// TestRecallKeepsToActiveBranches: a message edited away in one session
// is never recalled from another with recall "all", on the turn that reads
// the hits' sessions (the first on an instance) and on the turns that do
// not (they take the user's deleted sessions and off-branch messages from
// the read they make anyway), on this instance and a new one; switched
// back to, the old version is recalled again and the edit no more. Both
// stores.
func TestRecallKeepsToActiveBranches(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
		alice := h.signUp()
		marina := h.newSession(alice.token, map[string]any{"title": "Marina"})
		first := h.turn(alice.token, map[string]any{"sessionId": marina, "message": "The boat mooring number is 31-ALPHA."})
		h.turn(alice.token, map[string]any{"sessionId": marina, "edit": first.UserMessage.ID, "message": "The boat mooring number is 47-BRAVO."})
		h.idle()
		other := h.newSession(alice.token, map[string]any{"title": "trip", "memory": map[string]any{"recall": "all", "recallK": 10}})
		ask := func(q string) string {
			t.Helper()
			h.turn(alice.token, map[string]any{"sessionId": other, "message": q})
			return h.systemOf(q)
		}
		for i, q := range []string{"What is the boat mooring number?", "Which mooring number has the boat?", "Boat mooring number, please?"} {
			if i == 2 {
				h.restart() // a new instance: it has seen nothing
			}
			sys := ask(q)
			if !strings.Contains(sys, "47-BRAVO") || strings.Contains(sys, "31-ALPHA") {
				t.Fatalf("turn %d recalled: %s", i+1, sys)
			}
		}
		// Back to the first version: it is the one recalled now.
		h.do("POST", "/sessions/"+marina+"/branch", alice.token, map[string]any{"seq": first.UserMessage.Seq}).want(t, 200)
		h.idle()
		if sys := ask("The mooring number of the boat?"); !strings.Contains(sys, "31-ALPHA") || strings.Contains(sys, "47-BRAVO") {
			t.Fatalf("after switching back to the first version: %s", sys)
		}
	})
}
