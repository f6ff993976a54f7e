package functions

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/chatmemory/backend/kernel/errs"
)

// Verifier turns a Firebase ID token into the uid of its user.
type Verifier interface {
	Verify(ctx context.Context, idToken string) (uid string, err error)
}

// FirebaseVerifier verifies ID tokens with firebase-admin-go, including
// revocation and disabled accounts. The token's signature is checked
// locally with Google's cached keys; whether its account was disabled or
// its tokens revoked is asked of the Auth backend at most once per user
// per RevocationTTL, so a busy user costs one Auth round trip every few
// minutes rather than one per request. The trade-off: a token revoked (or
// an account disabled) is still accepted by an instance that asked within
// the last RevocationTTL. Zero asks on every request.
type FirebaseVerifier struct {
	Client        *auth.Client
	Timeout       time.Duration // for each check; 0: the caller's context alone
	RevocationTTL time.Duration
	Now           func() time.Time // the clock of the cache; nil: time.Now

	// decode and lookup default to the Client's; tests replace them.
	decode func(ctx context.Context, idToken string) (*auth.Token, error)
	lookup func(ctx context.Context, uid string) (*auth.UserRecord, error)

	mu    sync.Mutex
	known map[string]accountState
}

// accountState is what the Auth backend said of an account, and when.
type accountState struct {
	disabled         bool
	validAfterMillis int64 // tokens issued before were revoked
	at               time.Time
}

// maxKnownAccounts bounds the cache; past it, stale entries are dropped.
const maxKnownAccounts = 100_000

// Verify returns EUNAUTHENTICATED for a token that is malformed, expired,
// revoked, for another project, or of a user that is disabled or gone, and
// EUNAVAILABLE when the Auth service cannot be asked.
func (v *FirebaseVerifier) Verify(ctx context.Context, idToken string) (string, error) {
	if v.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.Timeout)
		defer cancel()
	}
	decode := v.decode
	if decode == nil {
		decode = v.Client.VerifyIDToken
	}
	tok, err := decode(ctx, idToken)
	if err == nil {
		err = v.checkAccount(ctx, tok)
	}
	if err == nil {
		return tok.UID, nil
	}
	return "", authError(err)
}

// checkAccount refuses tokens of disabled accounts and revoked tokens, by
// what the Auth backend said of the account within RevocationTTL.
func (v *FirebaseVerifier) checkAccount(ctx context.Context, tok *auth.Token) error {
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	st, ok := v.cached(tok.UID, now)
	if !ok {
		lookup := v.lookup
		if lookup == nil {
			lookup = v.Client.GetUser
		}
		u, err := lookup(ctx, tok.UID)
		if err != nil {
			return err
		}
		st = accountState{disabled: u.Disabled, validAfterMillis: u.TokensValidAfterMillis, at: now}
		v.remember(tok.UID, st, now)
	}
	switch {
	case st.disabled:
		return errAccountDisabled
	case tok.IssuedAt*1000 < st.validAfterMillis:
		return errTokenRevoked
	}
	return nil
}

func (v *FirebaseVerifier) cached(uid string, now time.Time) (accountState, bool) {
	if v.RevocationTTL <= 0 {
		return accountState{}, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	st, ok := v.known[uid]
	return st, ok && now.Sub(st.at) < v.RevocationTTL && !now.Before(st.at)
}

func (v *FirebaseVerifier) remember(uid string, st accountState, now time.Time) {
	if v.RevocationTTL <= 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.known == nil {
		v.known = make(map[string]accountState)
	}
	if len(v.known) >= maxKnownAccounts {
		for k, old := range v.known {
			if now.Sub(old.at) >= v.RevocationTTL {
				delete(v.known, k)
			}
		}
		if len(v.known) >= maxKnownAccounts {
			clear(v.known)
		}
	}
	v.known[uid] = st
}

type accountError string

func (e accountError) Error() string { return string(e) }

const (
	errAccountDisabled = accountError("the account is disabled")
	errTokenRevoked    = accountError("the ID token has been revoked")
)

// authError maps what verifying a token failed with to the error a caller
// sees.
func authError(err error) error {
	var ae accountError
	switch {
	case errors.As(err, &ae):
		return errs.Wrap(errs.EUNAUTHENTICATED, err, string(ae))
	case auth.IsIDTokenExpired(err):
		return errs.Wrap(errs.EUNAUTHENTICATED, err, "the ID token has expired")
	case auth.IsIDTokenRevoked(err):
		return errs.Wrap(errs.EUNAUTHENTICATED, err, "the ID token has been revoked")
	case auth.IsUserDisabled(err):
		return errs.Wrap(errs.EUNAUTHENTICATED, err, "the account is disabled")
	case auth.IsUserNotFound(err):
		return errs.Wrap(errs.EUNAUTHENTICATED, err, "the account no longer exists")
	case auth.IsIDTokenInvalid(err), auth.IsTenantIDMismatch(err):
		return errs.Wrap(errs.EUNAUTHENTICATED, err, "the ID token is invalid")
	case auth.IsCertificateFetchFailed(err), isTransport(err):
		return errs.Wrap(errs.EUNAVAILABLE, err, "authentication is unavailable; try again")
	default:
		// The verifier reports malformed tokens as plain errors.
		return errs.Wrap(errs.EUNAUTHENTICATED, err, "the ID token is invalid")
	}
}

// isTransport reports errors of reaching a service rather than of the token.
func isTransport(err error) bool {
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "unexpected http response")
}

type uidKey struct{}

// UserID returns the verified uid of the caller; it never comes from a body.
func UserID(ctx context.Context) string {
	uid, _ := ctx.Value(uidKey{}).(string)
	return uid
}

// authenticate admits requests that carry a valid Firebase ID token.
func (a *App) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.checkApp(w, r) {
			return
		}
		h := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(h, "Bearer ")
		token = strings.TrimSpace(token)
		if !ok || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			a.writeError(w, r, errs.Errorf(errs.EUNAUTHENTICATED, "sign in: send Authorization: Bearer <Firebase ID token>"))
			return
		}
		uid, err := a.Auth.Verify(r.Context(), token)
		if err != nil {
			if errs.CodeOf(err) == errs.EUNAUTHENTICATED {
				w.Header().Set("WWW-Authenticate", `Bearer realm="api", error="invalid_token"`)
			}
			a.writeError(w, r, err)
			return
		}
		info(r.Context()).userID = uid
		next.ServeHTTP(w, r.WithContext(withUserID(r.Context(), uid)))
	})
}

func withUserID(ctx context.Context, uid string) context.Context {
	return context.WithValue(ctx, uidKey{}, uid)
}
