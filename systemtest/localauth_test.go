package systemtest_test

import (
	"context"
	"sync"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// localAuth stands in for Firebase Auth beside the in-process store, so
// that the HTTP tests on that store need no emulator: it signs users up,
// issues each an unguessable token and accepts only the tokens it issued.
// What Firebase Auth itself decides (signatures, expiry, revocation,
// disabled and deleted accounts) is tested against the Auth emulator
// (TestAuth, TestRevocationIsCheckedOncePerTTL, TestAccountDeletedInAuth).
type localAuth struct {
	mu     sync.Mutex
	tokens map[string]string // token → uid
	uids   map[string]bool   // the users signed up
}

func newLocalAuth() *localAuth {
	return &localAuth{tokens: map[string]string{}, uids: map[string]bool{}}
}

// signUp creates a user with email and returns it with its token.
func (a *localAuth) signUp(email string) user {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := user{uid: ids.New(), token: ids.New() + ids.New(), email: email}
	a.tokens[u.token], a.uids[u.uid] = u.uid, true
	return u
}

// deleteUser deletes the account uid; its tokens are refused from now on.
func (a *localAuth) deleteUser(uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.uids, uid)
	for token, owner := range a.tokens {
		if owner == uid {
			delete(a.tokens, token)
		}
	}
}

// Verify is the uid of the user token was issued to.
func (a *localAuth) Verify(_ context.Context, token string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	uid, ok := a.tokens[token]
	if !ok {
		return "", errs.Errorf(errs.EUNAUTHENTICATED, "the ID token is invalid")
	}
	return uid, nil
}

// Missing is those of uids never signed up here.
func (a *localAuth) Missing(_ context.Context, uids []string) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, uid := range uids {
		if !a.uids[uid] {
			out = append(out, uid)
		}
	}
	return out, nil
}
