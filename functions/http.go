package functions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// statusProbe records only the status a handler would send.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }

func (p *statusProbe) WriteHeader(status int) { p.status = status }

// statusWriter remembers the status for the request log and passes
// flushes through, for streaming.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprint("panic: ", p.v) }

// deadlineBody lifts the read deadline when the body has been read.
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.lifted {
		b.lifted = true
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			b.lift()
		}
	}
	return n, err
}

// decode reads a JSON body strictly into v.
func (a *App) decode(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		return errs.Errorf(eTimeout, "the request body did not arrive within %s", a.ReadTimeout)
	case err != nil:
		return errs.Wrap(errs.EINVALID, err, "could not read the request body")
	case len(strings.TrimSpace(string(data))) == 0:
		return errs.Errorf(errs.EINVALID, "the request body is empty; send JSON")
	}
	return strictjson.Decode(data, v)
}

// queryInt reads an optional whole-number query parameter.
// queryLimit reads a page size: absent is the default (0), anything given
// must be within 1 and paging.MaxSize.
func queryLimit(r *http.Request) (int, error) {
	n, err := queryInt(r, "limit")
	if err == nil && r.URL.Query().Has("limit") && n < 1 {
		return 0, errs.Errorf(errs.EINVALID, "limit must be between 1 and %d", paging.MaxSize)
	}
	return n, err
}

func queryInt(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errs.Errorf(errs.EINVALID, "%s must be a whole number", name)
	}
	return n, nil
}

// NewServer is the HTTP server of local runs: headers must arrive within
// 10 seconds and idle connections close after two minutes; the App bounds
// each request's body by its ReadTimeout. (There is no whole-request read
// timeout: it would cut streamed replies.)
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// APIPrefixes are the top-level paths of the API's routes ("/chat",
// "/sessions", …): a server that also serves the web app sends these to
// the API and the rest to the files.
func (a *App) APIPrefixes() []string {
	if a.prefixes == nil {
		a.Handler()
	}
	return slices.Clone(a.prefixes)
}

// Handler returns every endpoint under its path, behind logging, panic
// recovery, CORS and the body cap.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	a.prefixes = nil
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		_, path, _ := strings.Cut(pattern, " ")
		top := "/" + strings.SplitN(strings.TrimPrefix(path, "/"), "/", 2)[0]
		if !slices.Contains(a.prefixes, top) {
			a.prefixes = append(a.prefixes, top)
		}
	}
	handle("GET /healthz", http.HandlerFunc(a.healthz))
	for _, rt := range a.routes() {
		handle(rt.pattern, a.authenticate(a.checkPathIDs(rt.pattern, rt.handler)))
	}

	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			nameSpan(r.Context(), pattern)
			info(r.Context()).route = pattern
			mux.ServeHTTP(w, r) // binds the path values, which h alone would not
			return
		}
		// No route: answer in JSON like everything else, keeping the
		// mux's distinction between an unknown path and a wrong method.
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			a.writeError(w, r, errs.Errorf(eMethod, "method %s is not allowed here", r.Method))
			return
		}
		a.writeError(w, r, errs.Errorf(errs.ENOTFOUND, "no such endpoint"))
	})
	return a.traceRequests(a.logRequests(a.recoverPanics(a.cors(a.limitBody(routed)))))
}

// route is one endpoint behind authentication: its method and path, and
// its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routes are the API's endpoints but /healthz (README's table and
// docs/openapi.yaml list the same ones: TestReadmeEndpoints).
func (a *App) routes() []route {
	return []route{
		{"POST /chat", a.chat},
		{"POST /sessions", a.createSession},
		{"GET /sessions", a.listSessions},
		{"GET /sessions/{id}", a.getSession},
		{"PATCH /sessions/{id}", a.updateSession},
		{"DELETE /sessions/{id}", a.deleteSession},
		{"POST /sessions/{id}/archive", a.archiveSession},
		{"POST /sessions/{id}/restore", a.restoreSession},
		{"GET /sessions/{id}/messages", a.listMessages},
		{"GET /sessions/{id}/context", a.sessionContext},
		{"GET /account/export", a.exportAccount},
		{"DELETE /account/data", a.eraseAccount},
		{"GET /memory", a.getMemory},
		{"PATCH /memory", a.setMemory},
		{"DELETE /memory", a.forgetAll},
		{"PATCH /memory/profile", a.patchProfile},
		{"PATCH /memory/history", a.patchHistory},
		{"DELETE /memory/facts/{id}", a.forgetFact},
		{"POST /sessions/{id}/messages", a.appendMessages},
		{"POST /sessions/{id}/replies/{replyId}/stop", a.stopReply},
		{"POST /sessions/{id}/branch", a.switchBranch},
		{"GET /search", a.search},
		{"GET /usage", a.usage},
		{"POST /attachments", a.withFiles(a.uploadAttachment)},
		{"GET /attachments", a.withFiles(a.listAttachments)},
		{"GET /attachments/{id}", a.withFiles(a.getAttachment)},
		{"DELETE /attachments/{id}", a.withFiles(a.deleteAttachment)},
		{"GET /models", a.listModels},
		{"POST /sessions/{id}/compactions", a.recordCompaction},
		{"PUT /sessions/{id}/messages/{messageId}/feedback", a.setFeedback},
		{"DELETE /sessions/{id}/messages/{messageId}/feedback", a.deleteFeedback},
		{"POST /callable/{name}", a.callable},
		{"POST /ai-sdk/chat", a.aiChat},
		{"GET /ai-sdk/chat/{id}/stream", a.aiChatResume},
		{"GET /ai-sdk/chat/{id}/messages", a.aiChatMessages},
		{"POST /ai-sdk/chat/{id}/stop", a.aiChatStop},
	}
}

// checkPathIDs answers 400, naming the parameter, when an id in the path
// of pattern could not name a document ("__x__", "a/b", "..", invalid
// UTF-8), before h sees it: every id a route takes is checked here, so
// none reaches the database, where it would be an error of the database.
func (a *App) checkPathIDs(pattern string, h http.HandlerFunc) http.HandlerFunc {
	var names []string
	for _, part := range strings.Split(pattern, "/") {
		if strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}") {
			names = append(names, strings.Trim(part, "{}"))
		}
	}
	if len(names) == 0 {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		for _, name := range names {
			if !ids.Valid(r.PathValue(name)) {
				a.writeError(w, r, errs.Errorf(errs.EINVALID, "path parameter %s is malformed: ids are 1 to 128 letters, digits, '_' or '-', not starting with \"__\"", name))
				return
			}
		}
		h(w, r)
	}
}

// requestInfo is filled in as a request is handled and logged at its end.
type requestInfo struct {
	id        string
	userID    string
	sessionID string
	appCheck  string // the App Check verdict, when App Check is on
	route     string // the pattern that matched, for metrics
}

type infoKey struct{}

func info(ctx context.Context) *requestInfo {
	if ri, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{}
}

// logRequests writes one structured line per request: never bodies or
// message content.
func (a *App) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &requestInfo{id: requestID(r)}
		w.Header().Set("X-Request-Id", ri.id)
		sw := &statusWriter{ResponseWriter: w}
		ctx := context.WithValue(r.Context(), infoKey{}, ri)
		next.ServeHTTP(sw, r.WithContext(ctx))
		a.Log.InfoContext(ctx, "request",
			"requestId", ri.id, "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"userId", ri.userID, "sessionId", ri.sessionID, "appCheck", ri.appCheck,
			"latencyMs", time.Since(start).Milliseconds())
	})
}

func requestID(r *http.Request) string {
	if t := r.Header.Get("X-Cloud-Trace-Context"); t != "" {
		if id, _, _ := strings.Cut(t, "/"); len(id) <= 64 && id != "" {
			return id
		}
	}
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (a *App) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.writeError(w, r, errs.Wrap(errs.EINTERNAL, panicError{v}, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// cors answers preflights and marks responses for the allowed origins.
// "*" allows any origin (safe here: credentials travel in the
// Authorization header, not in cookies).
func (a *App) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allowed := origin != "" && (slices.Contains(a.AllowedOrigins, "*") || slices.Contains(a.AllowedOrigins, origin))
		if origin != "" {
			w.Header().Add("Vary", "Origin")
		}
		if allowed {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", "Retry-After, X-Request-Id, Location, Content-Disposition, ETag")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if !allowed { // no CORS headers: the browser refuses the request
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, "+AppCheckHeader)
			w.Header().Set("Access-Control-Max-Age", "3600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps a request's body in size and, with ReadTimeout, in time:
// the connection's read deadline covers the body only and is lifted once
// it has been read, so a streamed reply is never cut by it.
func (a *App) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, tooBig := a.MaxBodyBytes, tooLarge(a.MaxBodyBytes)
		if a.isUpload(r) {
			limit = a.Attachments.MaxFile() + uploadOverhead
			tooBig = errs.Errorf(errs.ETOOLARGE, "file: it is larger than the %d bytes taken", a.Attachments.MaxFile())
		}
		if r.ContentLength > limit {
			a.writeError(w, r, tooBig)
			return
		}
		body := http.MaxBytesReader(w, r.Body, limit)
		if a.ReadTimeout > 0 && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(a.ReadTimeout)) == nil {
				body = &deadlineBody{ReadCloser: body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
			}
		}
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

func tooLarge(n int64) error {
	return errs.Errorf(errs.ETOOLARGE, "the request body is larger than %d bytes", n)
}

func (a *App) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := a.Health.Ping(ctx); err != nil {
		a.Log.ErrorContext(r.Context(), "health check: storage does not answer", "error", err.Error())
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "storage": "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "storage": "ok"})
}
