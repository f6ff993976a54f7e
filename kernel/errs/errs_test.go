package errs

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestReading(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.1: refused")
	limited := &Error{Code: ERATELIMITED, Message: "slow down", RetryAfter: 3 * time.Second}
	for _, tc := range []struct {
		name    string
		err     error
		code    Code
		message string
		retry   time.Duration
	}{
		{"nil", nil, "", "internal error", 0},
		{"plain", cause, EINTERNAL, "internal error", 0},
		{"coded", Errorf(EINVALID, "limit must be between %d and %d", 1, 100), EINVALID, "limit must be between 1 and 100", 0},
		{"wrapped cause stays hidden", Wrap(EUNAVAILABLE, cause, "the database is unavailable"), EUNAVAILABLE, "the database is unavailable", 0},
		{"internal message stays hidden", Wrap(EINTERNAL, cause, "saving the reply"), EINTERNAL, "internal error", 0},
		{"through fmt wrapping", fmt.Errorf("turn: %w", limited), ERATELIMITED, "slow down", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.code {
				t.Errorf("CodeOf = %q, want %q", got, tc.code)
			}
			if got := Message(tc.err); got != tc.message {
				t.Errorf("Message = %q, want %q", got, tc.message)
			}
			if got := RetryAfter(tc.err); got != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", got, tc.retry)
			}
		})
	}
	if w := Wrap(EUNAVAILABLE, cause, "x"); !errors.Is(w, cause) {
		t.Error("Wrap does not unwrap to its cause")
	}
}
