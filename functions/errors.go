package functions

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Codes that exist only at the HTTP edge.
const (
	eMethod  errs.Code = "method_not_allowed"
	eTimeout errs.Code = "request_timeout" // the body came too slowly
)

// answer is how an error code is answered: its HTTP status, and its
// status in the Firebase callable protocol with the HTTP status that
// protocol fixes for it.
type answer struct {
	http         int
	callable     string
	callableHTTP int
}

// answers is the one table from error code to answer.
var answers = map[errs.Code]answer{
	errs.EINVALID:         {http.StatusBadRequest, "INVALID_ARGUMENT", 400},
	errs.EUNAUTHENTICATED: {http.StatusUnauthorized, "UNAUTHENTICATED", 401},
	errs.ENOTFOUND:        {http.StatusNotFound, "NOT_FOUND", 404},
	eMethod:               {http.StatusMethodNotAllowed, "INVALID_ARGUMENT", 400},
	errs.ECONFLICT:        {http.StatusConflict, "ABORTED", 409},
	errs.EPRECONDITION:    {http.StatusConflict, "FAILED_PRECONDITION", 400},
	errs.ECHANGED:         {http.StatusPreconditionFailed, "FAILED_PRECONDITION", 400},
	errs.ETOOLARGE:        {http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", 400},
	errs.ERATELIMITED:     {http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", 429},
	errs.EUNSUPPORTED:     {http.StatusUnsupportedMediaType, "INVALID_ARGUMENT", 400},
	errs.EQUOTA:           {http.StatusRequestEntityTooLarge, "RESOURCE_EXHAUSTED", 429},
	errs.EINTERNAL:        {http.StatusInternalServerError, "INTERNAL", 500},
	errs.EUPSTREAM:        {http.StatusBadGateway, "UNAVAILABLE", 503},
	errs.EUNAVAILABLE:     {http.StatusServiceUnavailable, "UNAVAILABLE", 503},
	eTimeout:              {http.StatusRequestTimeout, "DEADLINE_EXCEEDED", 504},
}

// writeError answers with err. Server-side failures are logged with their
// cause; the caller sees only the code and the safe message.
func (a *App) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := StatusOf(err)
	a.logFailure(r, status, err)
	route := info(r.Context()).route
	if route == "" {
		route = "unrouted"
	}
	a.Metrics.error(r.Context(), apiCode(err), route)
	if d := retryAfter(err); d > 0 {
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
		a.Log.InfoContext(r.Context(), "request refused", "status", status, "code", string(errs.CodeOf(err)))
	}
}

// LogHandler writes JSON log lines Cloud Logging understands to w, from
// level up.
func LogHandler(w interface{ Write([]byte) (int, error) }, level slog.Level) slog.Handler {
	return logHandler(w, level)
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

// WriteError answers err as every endpoint does.
func WriteError(w http.ResponseWriter, err error) {
	writeJSON(w, StatusOf(err), bodyOf(err))
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
	// RetryAfter, in seconds, is set when trying the same request again
	// can succeed (as the Retry-After header): after a fault that passes,
	// a busy session or a rate limit.
	RetryAfter int `json:"retryAfter,omitempty"`
}

// bodyOf is what a caller is shown of err: its code and safe message.
func bodyOf(err error) errorBody {
	code := errs.CodeOf(err)
	if _, ok := answers[code]; !ok {
		code = errs.EINTERNAL
	}
	return errorBody{Error: errorDetail{Code: code, Message: errs.Message(err), RetryAfter: int(retryAfter(err).Seconds())}}
}

// faultRetry is the Retry-After of a 502 or 503 that says nothing better:
// the faults behind them (a dropped connection, a model's 500) pass soon.
const faultRetry = time.Second

// retryAfter is how long a caller should wait before trying err's request
// again; 0 if trying again will not help.
func retryAfter(err error) time.Duration {
	d := errs.RetryAfter(err)
	if s := StatusOf(err); d == 0 && (s == http.StatusServiceUnavailable || s == http.StatusBadGateway) {
		d = faultRetry
	}
	return d
}

// StatusOf returns the HTTP status for err.
func StatusOf(err error) int { return answerOf(errs.CodeOf(err)).http }

// answerOf returns how code is answered; an unknown code as internal.
func answerOf(code errs.Code) answer {
	if a, ok := answers[code]; ok {
		return a
	}
	return answers[errs.EINTERNAL]
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
