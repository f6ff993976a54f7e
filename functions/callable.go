package functions

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// The Firebase callable protocol, beside REST: what a web app calls with
// the Firebase JS SDK's httpsCallableFromURL(functions, "<api>/callable/<name>"),
// .stream() included. A request is POST {"data": {...}} with the ID token
// in Authorization; the answer is {"result": ...} (the REST endpoint's
// JSON) or {"error": {"status", "message", "details"}} with the
// protocol's status name and HTTP status. A streamed call (Accept:
// text/event-stream) answers with events "data: {"message": ...}" (the
// turn's session, then each piece of the reply) and last
// "data: {"result": ...}" or "data: {"error": ...}".
//
// Each callable runs the REST endpoint of the same operation, so both
// protocols share every check, limit and trace.

// callableOp is how a callable maps onto its REST endpoint.
type callableOp struct {
	handler func(*App, http.ResponseWriter, *http.Request)
	method  string
	path    map[string]string // data field → path value
	query   []string          // data fields sent as query parameters
	body    string            // "": the remaining fields are the body; "-": none; else that field is
}

var callables = map[string]callableOp{
	"chat":           {handler: (*App).chat, method: "POST"},
	"createSession":  {handler: (*App).createSession, method: "POST"},
	"listSessions":   {handler: (*App).listSessions, method: "GET", query: []string{"status", "limit", "pageToken"}, body: "-"},
	"getSession":     {handler: (*App).getSession, method: "GET", path: map[string]string{"sessionId": "id"}, body: "-"},
	"updateSession":  {handler: (*App).updateSession, method: "PATCH", path: map[string]string{"sessionId": "id"}, body: "changes"},
	"archiveSession": {handler: (*App).archiveSession, method: "POST", path: map[string]string{"sessionId": "id"}, body: "-"},
	"restoreSession": {handler: (*App).restoreSession, method: "POST", path: map[string]string{"sessionId": "id"}, body: "-"},
	"deleteSession":  {handler: (*App).deleteSession, method: "DELETE", path: map[string]string{"sessionId": "id"}, body: "-"},
	"listMessages": {handler: (*App).listMessages, method: "GET", path: map[string]string{"sessionId": "id"},
		query: []string{"order", "limit", "pageToken", "branch"}, body: "-"},
	"getContext":       {handler: (*App).sessionContext, method: "GET", path: map[string]string{"sessionId": "id"}, body: "-"},
	"switchBranch":     {handler: (*App).switchBranch, method: "POST", path: map[string]string{"sessionId": "id"}},
	"stopReply":        {handler: (*App).stopReply, method: "POST", path: map[string]string{"sessionId": "id", "replyId": "replyId"}, body: "-"},
	"search":           {handler: (*App).search, method: "GET", query: []string{"q", "sessionId", "limit"}, body: "-"},
	"usage":            {handler: (*App).usage, method: "GET", body: "-"},
	"listModels":       {handler: (*App).listModels, method: "GET", body: "-"},
	"recordCompaction": {handler: (*App).recordCompaction, method: "POST", path: map[string]string{"sessionId": "id"}},
	"setFeedback":      {handler: (*App).setFeedback, method: "PUT", path: map[string]string{"sessionId": "id", "messageId": "messageId"}},
	"deleteFeedback":   {handler: (*App).deleteFeedback, method: "DELETE", path: map[string]string{"sessionId": "id", "messageId": "messageId"}, body: "-"},
}

// callableError is an error as the protocol carries it; details hold this
// API's own code (and Retry-After's seconds, when there is one).
type callableError struct {
	Status  string         `json:"status"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func isCallable(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/callable/") }

// writeCallableError answers a callable request with err (see
// writeError): as an event to a streaming call, which reads only events.
func writeCallableError(w http.ResponseWriter, r *http.Request, err error) {
	e, status := toCallableError(bodyOf(err))
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		(&callableStream{w: w}).send(map[string]any{"error": e})
		return
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// callable serves POST /callable/{name}.
func (a *App) callable(w http.ResponseWriter, r *http.Request) {
	op, ok := callables[r.PathValue("name")]
	if !ok {
		a.writeError(w, r, errs.Errorf(errs.ENOTFOUND, "no callable function %q", r.PathValue("name")))
		return
	}
	var env struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := a.decode(r, &env); err != nil {
		a.writeError(w, r, err)
		return
	}
	inner, err := op.request(r, env.Data)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		sw := &callableStream{w: w}
		op.handler(a, sw, inner)
		sw.end()
		return
	}
	rec := &captured{header: http.Header{}}
	op.handler(a, rec, inner)
	for k, v := range rec.header {
		if k == "Retry-After" {
			w.Header()[k] = v
		}
	}
	if rec.status >= 400 {
		var b errorBody
		json.Unmarshal(rec.body.Bytes(), &b)
		e, status := toCallableError(b)
		writeJSON(w, status, map[string]any{"error": e})
		return
	}
	result := json.RawMessage(bytes.TrimSpace(rec.body.Bytes()))
	if len(result) == 0 { // 204 No Content
		result = json.RawMessage("{}")
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": result})
}

// request is the REST request that runs the callable: data's fields in
// the path, the query and the body as op says.
func (op callableOp) request(r *http.Request, data map[string]json.RawMessage) (*http.Request, error) {
	fields := callData(maps.Clone(data))
	if fields == nil {
		fields = callData{} // no data: an empty body
	}
	inner := r.Clone(r.Context())
	inner.Method = op.method
	inner.URL = &url.URL{Path: "/" + r.PathValue("name")} // its errors in REST's form, translated by callable
	if err := op.setPath(inner, fields); err != nil {
		return nil, err
	}
	query, err := op.queryOf(fields)
	if err != nil {
		return nil, err
	}
	inner.URL.RawQuery = query.Encode()
	body, err := op.bodyOf(fields)
	if err != nil {
		return nil, err
	}
	setJSONBody(inner, body)
	inner.Header.Del("Accept")
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		inner.Header.Set("Accept", "text/event-stream")
	}
	return inner, nil
}

// setPath takes the path's values out of fields, each a session or
// message id, into inner's path.
func (op callableOp) setPath(inner *http.Request, fields callData) error {
	for field, name := range op.path {
		v, err := fields.take(field)
		if err != nil {
			return err
		}
		if err := sessions.CheckID(v); err != nil {
			return errs.Errorf(errs.EINVALID, "data.%s: %s", field, errs.Message(err))
		}
		inner.SetPathValue(name, v)
		if name == "id" {
			info(inner.Context()).sessionID = v
		}
	}
	return nil
}

// queryOf takes the query's values out of fields (those given).
func (op callableOp) queryOf(fields callData) (url.Values, error) {
	q := url.Values{}
	for _, field := range op.query {
		if _, ok := fields[field]; !ok {
			continue
		}
		v, err := fields.take(field)
		if err != nil {
			return nil, err
		}
		q.Set(field, v)
	}
	return q, nil
}

// bodyOf is the REST body of what is left of fields: none ("-": nothing
// may be left), all of them (""), or the one field op.body names.
func (op callableOp) bodyOf(fields callData) (any, error) {
	switch op.body {
	case "-":
		if len(fields) > 0 {
			return nil, errs.Errorf(errs.EINVALID, "data has unknown fields: %s", strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
		return nil, nil
	case "":
		return map[string]json.RawMessage(fields), nil
	}
	raw, ok := fields[op.body]
	if !ok {
		return nil, errs.Errorf(errs.EINVALID, "data.%s is required", op.body)
	}
	delete(fields, op.body)
	if len(fields) > 0 {
		return nil, errs.Errorf(errs.EINVALID, "data has unknown fields besides %s", op.body)
	}
	return raw, nil
}

// setJSONBody makes body (nil: none) r's JSON body.
func setJSONBody(r *http.Request, body any) {
	r.Body, r.ContentLength = http.NoBody, 0
	if body == nil {
		return
	}
	b, _ := json.Marshal(body)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	r.Header.Set("Content-Type", "application/json")
}

// callData is a callable's data, by field.
type callData map[string]json.RawMessage

// take removes field from d and returns it as a string (a number is
// taken as written).
func (d callData) take(field string) (string, error) {
	raw, ok := d[field]
	delete(d, field)
	if !ok {
		return "", errs.Errorf(errs.EINVALID, "data.%s is required", field)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", errs.Errorf(errs.EINVALID, "data.%s must be a string", field)
		}
		s = n.String()
	}
	return s, nil
}

// captured is a response held in memory.
type captured struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header { return c.header }

func (c *captured) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}
func (c *captured) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}
func (s *callableStream) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
}

func (s *callableStream) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.buf.Write(b)
	if !strings.HasPrefix(s.Header().Get("Content-Type"), "text/event-stream") {
		return len(b), nil // a JSON error, answered at the end
	}
	for {
		frame, rest, ok := bytes.Cut(s.buf.Bytes(), []byte("\n\n"))
		if !ok {
			break
		}
		s.frame(string(frame))
		s.buf = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return len(b), nil
}

// callableStream turns a REST turn's server-sent events (session, delta,
// done, error) into the streaming callable protocol's, as they are
// written; a JSON error sent before any event becomes an error event.
type callableStream struct {
	w      http.ResponseWriter
	sse    *sseWriter // nil until the first event
	header http.Header
	status int
	buf    bytes.Buffer
}

func (s *callableStream) Header() http.Header {
	if s.header == nil {
		s.header = http.Header{}
	}
	return s.header
}

// frame translates one event.
func (s *callableStream) frame(frame string) {
	var event, data string
	for _, line := range strings.Split(frame, "\n") {
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
		}
	}
	raw := json.RawMessage(data)
	switch event {
	case "session", "delta":
		var fields map[string]json.RawMessage
		json.Unmarshal(raw, &fields)
		fields["type"], _ = json.Marshal(event)
		s.send(map[string]any{"message": fields})
	case "done":
		s.send(map[string]any{"result": raw})
	case "error":
		var b errorBody
		json.Unmarshal(raw, &b)
		e, _ := toCallableError(b)
		s.send(map[string]any{"error": e})
	}
}

// end answers a stream that never started (an error before the turn ran).
func (s *callableStream) end() {
	if s.sse != nil || s.buf.Len() == 0 {
		return
	}
	var b errorBody
	json.Unmarshal(s.buf.Bytes(), &b)
	e, _ := toCallableError(b)
	s.send(map[string]any{"error": e})
}

// toCallableError is b in the callable protocol, with the HTTP status the
// protocol gives it.
func toCallableError(b errorBody) (callableError, int) {
	a := answerOf(b.Error.Code)
	d := map[string]any{"code": b.Error.Code}
	if b.Error.RetryAfter > 0 {
		d["retryAfter"] = strconv.Itoa(b.Error.RetryAfter)
	}
	return callableError{Status: a.callable, Message: b.Error.Message, Details: d}, a.callableHTTP
}

func (s *callableStream) send(v any) {
	if s.sse == nil {
		s.sse = newSSE(s.w)
	}
	s.sse.event("", v)
}

func (s *callableStream) Flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
