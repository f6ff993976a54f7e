package functions

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/chatmemory/backend/sessions"
)

// Verifier turns a Firebase ID token into the uid of its user.
type Verifier interface {
	Verify(ctx context.Context, idToken string) (uid string, err error)
}

// FirebaseVerifier verifies ID tokens with firebase-admin-go, including
// revocation and disabled accounts.
type FirebaseVerifier struct {
	Client  *auth.Client
	Timeout time.Duration // for each check; 0: the caller's context alone
}

// Verify returns EUNAUTHENTICATED for a token that is malformed, expired,
// revoked, for another project, or of a user that is disabled or gone, and
// EUNAVAILABLE when the Auth service cannot be asked.
func (v FirebaseVerifier) Verify(ctx context.Context, idToken string) (string, error) {
	if v.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.Timeout)
		defer cancel()
	}
	tok, err := v.Client.VerifyIDTokenAndCheckRevoked(ctx, idToken)
	switch {
	case err == nil:
		return tok.UID, nil
	case auth.IsIDTokenExpired(err):
		return "", sessions.Wrap(sessions.EUNAUTHENTICATED, err, "the ID token has expired")
	case auth.IsIDTokenRevoked(err):
		return "", sessions.Wrap(sessions.EUNAUTHENTICATED, err, "the ID token has been revoked")
	case auth.IsUserDisabled(err):
		return "", sessions.Wrap(sessions.EUNAUTHENTICATED, err, "the account is disabled")
	case auth.IsUserNotFound(err):
		return "", sessions.Wrap(sessions.EUNAUTHENTICATED, err, "the account no longer exists")
	case auth.IsIDTokenInvalid(err), auth.IsTenantIDMismatch(err):
		return "", sessions.Wrap(sessions.EUNAUTHENTICATED, err, "the ID token is invalid")
	case auth.IsCertificateFetchFailed(err), isTransport(err):
		return "", sessions.Wrap(sessions.EUNAVAILABLE, err, "authentication is unavailable; try again")
	default:
		// The verifier reports malformed tokens as plain errors.
		return "", sessions.Wrap(sessions.EUNAUTHENTICATED, err, "the ID token is invalid")
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

func withUserID(ctx context.Context, uid string) context.Context {
	return context.WithValue(ctx, uidKey{}, uid)
}

// authenticate admits requests that carry a valid Firebase ID token.
func (a *App) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(h, "Bearer ")
		token = strings.TrimSpace(token)
		if !ok || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			a.writeError(w, r, sessions.Errorf(sessions.EUNAUTHENTICATED, "sign in: send Authorization: Bearer <Firebase ID token>"))
			return
		}
		uid, err := a.Auth.Verify(r.Context(), token)
		if err != nil {
			if sessions.ErrorCode(err) == sessions.EUNAUTHENTICATED {
				w.Header().Set("WWW-Authenticate", `Bearer realm="api", error="invalid_token"`)
			}
			a.writeError(w, r, err)
			return
		}
		info(r.Context()).userID = uid
		next.ServeHTTP(w, r.WithContext(withUserID(r.Context(), uid)))
	})
}
