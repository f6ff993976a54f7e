package functions

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// Codes that exist only at the HTTP edge.
const (
	eMethod  sessions.Code = "method_not_allowed"
	eTimeout sessions.Code = "request_timeout" // the body came too slowly
)

// statusOf is the one table from error code to HTTP status.
var statusOf = map[sessions.Code]int{
	sessions.EINVALID:         http.StatusBadRequest,
	sessions.EUNAUTHENTICATED: http.StatusUnauthorized,
	sessions.ENOTFOUND:        http.StatusNotFound,
	eMethod:                   http.StatusMethodNotAllowed,
	sessions.ECONFLICT:        http.StatusConflict,
	sessions.EPRECONDITION:    http.StatusConflict,
	sessions.ETOOLARGE:        http.StatusRequestEntityTooLarge,
	sessions.ERATELIMITED:     http.StatusTooManyRequests,
	sessions.EINTERNAL:        http.StatusInternalServerError,
	sessions.EUPSTREAM:        http.StatusBadGateway,
	sessions.EUNAVAILABLE:     http.StatusServiceUnavailable,
	eTimeout:                  http.StatusRequestTimeout,
}

// StatusOf returns the HTTP status for err.
func StatusOf(err error) int {
	if s, ok := statusOf[sessions.ErrorCode(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    sessions.Code `json:"code"`
	Message string        `json:"message"`
}

// bodyOf is what a caller is shown of err: its code and safe message.
func bodyOf(err error) errorBody {
	code := sessions.ErrorCode(err)
	if _, ok := statusOf[code]; !ok {
		code = sessions.EINTERNAL
	}
	return errorBody{Error: errorDetail{Code: code, Message: sessions.ErrorMessage(err)}}
}

// unavailableRetry is the Retry-After of a 503 that says nothing better.
const unavailableRetry = 5 * time.Second

// writeError answers with err. Server-side failures are logged with their
// cause; the caller sees only the code and the safe message.
func (a *App) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := StatusOf(err)
	a.logFailure(r, status, err)
	d := sessions.RetryAfter(err)
	if d == 0 && status == http.StatusServiceUnavailable {
		d = unavailableRetry
	}
	if d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.Seconds())))
	}
	if isCallable(r) {
		writeCallableError(w, r, err)
		return
	}
	writeJSON(w, status, bodyOf(err))
}

func (a *App) logFailure(r *http.Request, status int, err error) {
	switch {
	case status >= 500:
		a.Log.ErrorContext(r.Context(), "request failed", "status", status, "error", err.Error())
	case status != http.StatusNotFound && status != http.StatusUnauthorized:
		a.Log.InfoContext(r.Context(), "request refused", "status", status, "code", string(sessions.ErrorCode(err)))
	}
}

// writeJSON answers with v. The length is set, so a client has the whole
// answer as soon as it is written, even if the handler goes on working.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// logHandler returns a JSON slog handler whose records Cloud Logging reads:
// "severity" and "message" instead of slog's "level" and "msg".
func logHandler(w interface{ Write([]byte) (int, error) }, level slog.Level) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.LevelKey:
				lvl := a.Value.Any().(slog.Level)
				sev := "INFO"
				switch {
				case lvl >= slog.LevelError:
					sev = "ERROR"
				case lvl >= slog.LevelWarn:
					sev = "WARNING"
				case lvl < slog.LevelInfo:
					sev = "DEBUG"
				}
				return slog.String("severity", sev)
			case slog.MessageKey:
				return slog.Attr{Key: "message", Value: a.Value}
			}
			return a
		},
	})
}
