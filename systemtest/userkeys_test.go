package systemtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/chatmemory/backend/kernel/ids"
)

// signUpAs creates the account uid (as a custom token or a provider may
// name it) and returns it with an ID token.
func (h *harness) signUpAs(uid string) user {
	h.t.Helper()
	email := fmt.Sprintf("k%d-%s@example.com", time.Now().UnixNano(), ids.New())
	if h.local != nil {
		return h.local.signUpAs(uid, email)
	}
	if _, err := h.auth.CreateUser(context.Background(), (&auth.UserToCreate{}).UID(uid).Email(email).Password("password123")); err != nil {
		h.t.Fatal(err)
	}
	url := "http://" + os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") + "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=test"
	body, _ := json.Marshal(map[string]any{"email": email, "password": "password123", "returnSecureToken": true})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		IDToken string `json:"idToken"`
		LocalID string `json:"localId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.LocalID != uid {
		h.t.Fatalf("sign-in as %q: %v %+v (status %s)", uid, err, out, resp.Status)
	}
	return user{uid: uid, token: out.IDToken, email: email}
}

// signUpAs creates the account uid here and returns it with its token.
func (a *localAuth) signUpAs(uid, email string) user {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := user{uid: uid, token: ids.New() + ids.New(), email: email}
	a.tokens[u.token], a.uids[u.uid] = u.uid, true
	return u
}

// TestCollidingUserKeys: an account whose uid is literally the key an
// earlier version gave another uid (one that is not a safe document id:
// "h" and 40 hex digits of its SHA-256) shares nothing with it: not its
// memory (GET /memory, PATCH /memory/profile), its export, its usage, nor
// its erasure (DELETE /account/data). Both stores.
func TestCollidingUserKeys(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		first := fmt.Sprintf("custom:%s/bee", ids.New())
		sum := sha256.Sum256([]byte(first))
		victim, twin := h.signUpAs(first), h.signUpAs("h"+hex.EncodeToString(sum[:20]))
		h.do("PATCH", "/memory/profile", victim.token, map[string]any{"work": "Keeps bees in Lisbon."}).want(t, 200)
		h.do("POST", "/chat", victim.token, map[string]any{"message": "About my hives"}).want(t, 200)
		h.idle()
		tokens := func(u user) int {
			var usage struct{ Tokens struct{ Used int } }
			h.do("GET", "/usage", u.token, nil).want(t, 200).decode(t, &usage)
			return usage.Tokens.Used
		}
		spent := tokens(victim)
		if spent == 0 {
			t.Fatalf("the first account's turn spent no tokens")
		}

		if r := h.do("GET", "/memory", twin.token, nil).want(t, 200); strings.Contains(string(r.body), "bees") {
			t.Errorf("GET /memory of the twin shows the other account's: %s", r.body)
		}
		if r := h.do("GET", "/account/export", twin.token, nil).want(t, 200); strings.Contains(string(r.body), "bees") || strings.Contains(string(r.body), "hives") {
			t.Errorf("the twin's export holds the other account's data: %s", r.body)
		}
		if n := tokens(twin); n != 0 {
			t.Errorf("the twin's usage shows %d tokens it never spent", n)
		}
		h.do("PATCH", "/memory/profile", twin.token, map[string]any{"work": "Sells honey."}).want(t, 200)
		h.do("DELETE", "/account/data", twin.token, nil).want(t, 200)

		r := h.do("GET", "/memory", victim.token, nil).want(t, 200)
		if !strings.Contains(string(r.body), "Keeps bees in Lisbon.") || strings.Contains(string(r.body), "honey") {
			t.Errorf("after the twin's PATCH and erasure the first account's memory is %s", r.body)
		}
		var export struct{ Sessions []any }
		h.do("GET", "/account/export", victim.token, nil).want(t, 200).decode(t, &export)
		if len(export.Sessions) != 1 || tokens(victim) != spent {
			t.Errorf("after the twin's erasure the first account has %d sessions and %d tokens, want 1 and %d", len(export.Sessions), tokens(victim), spent)
		}
	})
}
