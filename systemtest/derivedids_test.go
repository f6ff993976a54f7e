package systemtest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestDerivedIDsAreNotGuessable: a keyed turn that starts a session, and
// its messages, are named under the server's secret: knowing the uid and
// the key (msg-3) does not give the session's id or the messages' (as the
// unkeyed hashes once did), while a retry still finds the same turn, and
// the same key of another user names another session. Both stores.
func TestDerivedIDsAreNotGuessable(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice, bob := h.signUp(), h.signUp()
		body := map[string]any{"message": "hello", "clientMessageId": "msg-3"}
		first := h.turn(alice.token, body)
		again := h.turn(alice.token, body)
		if again.SessionID != first.SessionID || again.Reply.ID != first.Reply.ID {
			t.Fatalf("a retry found session %s reply %s, want %s %s", again.SessionID, again.Reply.ID, first.SessionID, first.Reply.ID)
		}
		sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
		if first.SessionID == sum(alice.uid + "\x00msg-3")[:20] {
			t.Errorf("the session id is sha256(uid, key): %s", first.SessionID)
		}
		msgs := h.messages(alice.token, first.SessionID)
		if len(msgs) != 2 {
			t.Fatalf("%d messages, want 2", len(msgs))
		}
		for _, m := range msgs {
			if strings.Contains(m.ID, sum("msg-3")[:32]) {
				t.Errorf("message %s is named by sha256 of its key", m.ID)
			}
		}
		if other := h.turn(bob.token, body); other.SessionID == first.SessionID {
			t.Errorf("bob's msg-3 named alice's session %s", other.SessionID)
		}
	})
}
