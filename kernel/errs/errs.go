// Package errs holds the one error type of the backend. Every layer returns
// an *Error with a Code; the HTTP layer maps codes to statuses in exactly
// one table, and shows callers only the Message.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an Error.
type Code string

const (
	EINVALID         Code = "invalid_argument"
	EUNAUTHENTICATED Code = "unauthenticated"
	ENOTFOUND        Code = "not_found"
	ECONFLICT        Code = "conflict"
	EPRECONDITION    Code = "failed_precondition"
	ECHANGED         Code = "changed" // not as the caller read it (If-Match)
	ETOOLARGE        Code = "too_large"
	EUNSUPPORTED     Code = "unsupported_type" // a file of a type not taken, or not the type it claims
	EQUOTA           Code = "quota_exceeded"   // stored bytes would pass the user's quota
	ERATELIMITED     Code = "rate_limited"
	EUPSTREAM        Code = "upstream"
	EUNAVAILABLE     Code = "unavailable"
	EINTERNAL        Code = "internal"
)

// Error is the one error type of the application. Message is safe to show to
// the caller; Err, if set, is the underlying cause and is only ever logged.
type Error struct {
	Code    Code
	Message string
	Err     error
	// RetryAfter, when set (rate limits), says when trying again can succeed.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted, user-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error that keeps cause for the logs and shows only message.
func Wrap(code Code, cause error, message string) *Error {
	return &Error{Code: code, Message: message, Err: cause}
}

// CodeOf returns the code of err, EINTERNAL for errors of any other type
// and "" for nil.
func CodeOf(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EINTERNAL
	}
}

// RetryAfter returns how long the caller should wait before trying again, if err says.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// Message returns the user-safe message of err: the Message of an *Error,
// and "internal error" for anything else, whose text may hold internals.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != EINTERNAL {
		return e.Message
	}
	return "internal error"
}
