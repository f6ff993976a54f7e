package systemtest_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// callResp is a callable's answer.
type callResp struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Status  string         `json:"status"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func (h *harness) call(token, name string, data any) (int, callResp) {
	h.t.Helper()
	r := h.do("POST", "/callable/"+name, token, map[string]any{"data": data})
	var out callResp
	r.decode(h.t, &out)
	return r.status, out
}

// TestCallable: the callable protocol over the REST endpoints: results,
// the protocol's error statuses and HTTP codes, and a streamed turn.
func TestCallable(t *testing.T) {
	h := newHarnessOn(t, "memory")
	alice, bob := h.signUp(), h.signUp()
	status, res := h.call(alice.token, "chat", map[string]any{"message": "hello", "clientMessageId": "c1"})
	var turn chatResp
	if status != 200 || json.Unmarshal(res.Result, &turn) != nil || turn.Reply.Content != "echo: hello" {
		t.Fatalf("chat: %d %+v", status, res)
	}
	var page struct {
		Sessions []sessionResp `json:"sessions"`
	}
	if status, res = h.call(alice.token, "listSessions", map[string]any{"limit": 10}); status != 200 || json.Unmarshal(res.Result, &page) != nil || len(page.Sessions) != 1 {
		t.Fatalf("listSessions: %d %s", status, res.Result)
	}
	if status, res = h.call(alice.token, "listMessages", map[string]any{"sessionId": turn.SessionID, "order": "desc"}); status != 200 || !strings.Contains(string(res.Result), "echo: hello") {
		t.Fatalf("listMessages: %d %s", status, res.Result)
	}
	if status, res = h.call(alice.token, "updateSession", map[string]any{"sessionId": turn.SessionID, "changes": map[string]any{"title": "Called"}}); status != 200 || !strings.Contains(string(res.Result), `"title":"Called"`) {
		t.Fatalf("updateSession: %d %s", status, res.Result)
	}
	for _, tc := range []struct {
		name, token, fn string
		data            any
		status          int
		want            string
	}{
		{"OthersSession", bob.token, "getSession", map[string]any{"sessionId": turn.SessionID}, 404, "NOT_FOUND"},
		{"Unauthenticated", "", "listSessions", map[string]any{}, 401, "UNAUTHENTICATED"},
		{"BadToken", "nonsense", "listSessions", map[string]any{}, 401, "UNAUTHENTICATED"},
		{"UnknownFunction", alice.token, "dropTables", map[string]any{}, 404, "NOT_FOUND"},
		{"MissingSessionID", alice.token, "getSession", map[string]any{}, 400, "INVALID_ARGUMENT"},
		{"BadSessionID", alice.token, "getSession", map[string]any{"sessionId": "../x"}, 400, "INVALID_ARGUMENT"},
		{"UnknownField", alice.token, "getSession", map[string]any{"sessionId": turn.SessionID, "extra": 1}, 400, "INVALID_ARGUMENT"},
		{"BadBody", alice.token, "chat", map[string]any{"message": ""}, 400, "INVALID_ARGUMENT"},
		{"KeyReused", alice.token, "chat", map[string]any{"sessionId": turn.SessionID, "message": "other", "clientMessageId": "c1"}, 409, "ABORTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, res := h.call(tc.token, tc.fn, tc.data)
			if status != tc.status || res.Error == nil || res.Error.Status != tc.want || res.Error.Message == "" {
				t.Errorf("%d %+v, want %d %s", status, res.Error, tc.status, tc.want)
			}
		})
	}

	// Streaming: the turn's session and pieces as messages, then the result.
	r := doRequest(t, h.srv.URL, "POST", "/callable/chat", alice.token, map[string]any{"data": map[string]any{"sessionId": turn.SessionID, "message": "streamed"}},
		map[string]string{"Accept": "text/event-stream"}).want(t, 200)
	var types []string
	var result *chatResp
	for _, line := range strings.Split(string(r.body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Message map[string]any `json:"message"`
			Result  *chatResp      `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if ev.Message != nil {
			types = append(types, ev.Message["type"].(string))
		}
		if ev.Result != nil {
			result = ev.Result
		}
	}
	if len(types) < 2 || types[0] != "session" || types[len(types)-1] != "delta" || result == nil || result.Reply.Content != "echo: streamed" {
		t.Fatalf("stream: %v then %+v", types, result)
	}
	// An error in a stream is an event too: the SDK reads only events.
	r = doRequest(t, h.srv.URL, "POST", "/callable/chat", "", map[string]any{"data": map[string]any{"message": "x"}},
		map[string]string{"Accept": "text/event-stream"})
	if !strings.Contains(string(r.body), `data: {"error":{"status":"UNAUTHENTICATED"`) {
		t.Fatalf("an unauthenticated stream: %d %s", r.status, r.body)
	}
}
