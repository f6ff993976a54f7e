package functions

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

func TestErrorTable(t *testing.T) {
	for code, status := range map[errs.Code]int{
		errs.EINVALID: 400, errs.EUNAUTHENTICATED: 401, errs.ENOTFOUND: 404,
		errs.ECONFLICT: 409, errs.EPRECONDITION: 409, errs.ETOOLARGE: 413,
		errs.ERATELIMITED: 429, errs.EINTERNAL: 500, errs.EUPSTREAM: 502,
		errs.EUNAVAILABLE: 503,
	} {
		if got := StatusOf(errs.Errorf(code, "x")); got != status {
			t.Errorf("%s → %d, want %d", code, got, status)
		}
	}
}

// TestInternalErrorsHidden: an unexpected error is logged with its detail
// and shown to the caller only as "internal error".
func TestInternalErrorsHidden(t *testing.T) {
	var logs bytes.Buffer
	a := &App{Log: slog.New(logHandler(&logs, slog.LevelInfo))}
	for _, err := range []error{
		errors.New("firestore: row 7 of /secret/path exploded"),
		errs.Wrap(errs.EINTERNAL, errors.New("firestore: /secret/path"), "internal error"),
	} {
		logs.Reset()
		rec := httptest.NewRecorder()
		a.writeError(rec, httptest.NewRequest("GET", "/x", nil), err)
		if rec.Code != 500 || strings.TrimSpace(rec.Body.String()) != `{"error":{"code":"internal","message":"internal error"}}` {
			t.Errorf("shown: %d %s", rec.Code, rec.Body)
		}
		if !strings.Contains(logs.String(), "/secret/path") || !strings.Contains(logs.String(), `"severity":"ERROR"`) {
			t.Errorf("logged: %s", logs.String())
		}
	}
	rec := httptest.NewRecorder()
	e := errs.Errorf(errs.ERATELIMITED, "slow down")
	e.RetryAfter = 42 * time.Second
	a.writeError(rec, httptest.NewRequest("GET", "/x", nil), e)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "42" {
		t.Errorf("rate limited: %d %v", rec.Code, rec.Header())
	}
}
