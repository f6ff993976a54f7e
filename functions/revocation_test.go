package functions

import (
	"context"
	"errors"
	"testing"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/chatmemory/backend/kernel/errs"
)

// account is what a fake Auth backend holds of one user.
type account struct {
	disabled   bool
	validAfter time.Time
	down       bool // the backend cannot be reached
}

func TestRevocationIsCheckedOncePerTTL(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	issued := now.Add(-time.Minute)
	acct := &account{}
	lookups := 0
	newVerifier := func(ttl time.Duration) *FirebaseVerifier {
		return &FirebaseVerifier{
			RevocationTTL: ttl,
			Now:           func() time.Time { return now },
			decode: func(_ context.Context, tok string) (*auth.Token, error) {
				return &auth.Token{UID: tok, IssuedAt: issued.Unix()}, nil
			},
			lookup: func(_ context.Context, uid string) (*auth.UserRecord, error) {
				lookups++
				if acct.down {
					return nil, context.DeadlineExceeded
				}
				return &auth.UserRecord{UserInfo: &auth.UserInfo{UID: uid}, Disabled: acct.disabled,
					TokensValidAfterMillis: acct.validAfter.UnixMilli()}, nil
			},
		}
	}
	verify := func(v *FirebaseVerifier, uid string) errs.Code {
		t.Helper()
		got, err := v.Verify(context.Background(), uid)
		if err == nil && got != uid {
			t.Fatalf("uid %q, want %q", got, uid)
		}
		return errs.CodeOf(err)
	}

	t.Run("CachedWithinTTL", func(t *testing.T) {
		*acct, lookups = account{}, 0
		v := newVerifier(5 * time.Minute)
		for range 10 {
			if c := verify(v, "alice"); c != "" {
				t.Fatalf("code %q", c)
			}
		}
		if lookups != 1 {
			t.Fatalf("%d lookups for 10 requests of one user, want 1", lookups)
		}
		verify(v, "bob")
		if lookups != 2 {
			t.Fatalf("%d lookups after a second user, want 2", lookups)
		}
	})
	t.Run("RevocationSeenAfterTTL", func(t *testing.T) {
		*acct, lookups = account{}, 0
		v := newVerifier(5 * time.Minute)
		verify(v, "alice")
		acct.validAfter = now // tokens issued before now are revoked
		start := now
		now = now.Add(4 * time.Minute)
		if c := verify(v, "alice"); c != "" {
			t.Fatalf("within the TTL the cached state holds, got %q", c)
		}
		now = start.Add(5 * time.Minute)
		if c := verify(v, "alice"); c != errs.EUNAUTHENTICATED {
			t.Fatalf("after the TTL a revoked token must be refused, got %q", c)
		}
		now = start
	})
	t.Run("ZeroChecksEveryRequest", func(t *testing.T) {
		*acct, lookups = account{}, 0
		v := newVerifier(0)
		verify(v, "alice")
		acct.disabled = true
		if c := verify(v, "alice"); c != errs.EUNAUTHENTICATED {
			t.Fatalf("disabled account with TTL 0: %q", c)
		}
		if lookups != 2 {
			t.Fatalf("%d lookups, want 2", lookups)
		}
	})
	t.Run("FailuresAreNotCached", func(t *testing.T) {
		*acct, lookups = account{down: true}, 0
		v := newVerifier(5 * time.Minute)
		if c := verify(v, "alice"); c != errs.EUNAVAILABLE {
			t.Fatalf("unreachable Auth: %q, want %q", c, errs.EUNAVAILABLE)
		}
		acct.down = false
		if c := verify(v, "alice"); c != "" {
			t.Fatalf("after recovery: %q", c)
		}
		if lookups != 2 {
			t.Fatalf("%d lookups, want 2 (a failure is not remembered)", lookups)
		}
	})
	t.Run("BadTokenNeverLooksUp", func(t *testing.T) {
		lookups = 0
		v := newVerifier(5 * time.Minute)
		v.decode = func(context.Context, string) (*auth.Token, error) { return nil, errors.New("malformed") }
		if c := verify(v, "x"); c != errs.EUNAUTHENTICATED {
			t.Fatalf("malformed token: %q", c)
		}
		if lookups != 0 {
			t.Fatalf("%d lookups for a token that failed its signature check", lookups)
		}
	})
}
