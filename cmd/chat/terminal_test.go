package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAPI answers /chat as the backend does for a model that calls the
// first tool it is offered, and then answers with the result; and
// /sessions/nope/messages with a 404. It records the /chat bodies.
type fakeAPI struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"session nope not found"}}`)
		return
	}
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data) }
	send("session", `{"sessionId":"s1"}`)
	if results, ok := body["toolResults"].([]any); ok {
		send("delta", fmt.Sprintf(`{"text":"the tool said %s"}`, results[0].(map[string]any)["content"]))
		send("done", `{"sessionId":"s1","status":"completed"}`)
		return
	}
	if tools, ok := body["tools"].([]any); ok {
		name := tools[0].(map[string]any)["name"]
		send("tool_calls", fmt.Sprintf(`{"toolCalls":[{"id":"call_1","function":{"name":%q,"arguments":"{}"}}]}`, name))
		send("done", `{"sessionId":"s1","status":"requires_action"}`)
		return
	}
	send("delta", `{"text":"hello"}`)
	send("done", `{"sessionId":"s1","status":"completed"}`)
}

// TestTerminal: the terminal client lists its commands, answers a tool
// call with the result typed by hand, and prints an API error as one
// readable line.
func TestTerminal(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		out, errs   []string
		results     string // the content of the tool result sent, if any
	}{
		{"help", "/help\n", []string{"/tool NAME", "/help", "/quit"}, nil, ""},
		{"a tool round by hand", "/tool lookup_order\nwhere is my order?\nshipped Monday\n", []string{"tool lookup_order is offered", "the model calls lookup_order({})", "assistant> the tool said shipped Monday", "(session s1)"}, nil, "shipped Monday"},
		{"an API error", "/resume nope\n", nil, []string{"chat: session nope not found (HTTP 404): not_found\n"}, ""},
		{"an unknown command", "/frobnicate\n", []string{"/help lists them"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeAPI{}
			srv := httptest.NewServer(api)
			defer srv.Close()
			var out, errs strings.Builder
			term := &terminal{api: srv.URL, token: "t", in: bufio.NewScanner(strings.NewReader(tc.input)), out: &out, errs: &errs}
			term.run()
			for _, want := range tc.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			for _, want := range tc.errs {
				if !strings.Contains(errs.String(), want) {
					t.Errorf("errors lack %q:\n%s", want, errs.String())
				}
			}
			if tc.results != "" {
				last := api.bodies[len(api.bodies)-1]
				got := last["toolResults"].([]any)[0].(map[string]any)
				if got["toolCallId"] != "call_1" || got["content"] != tc.results || last["sessionId"] != "s1" {
					t.Errorf("sent %v", last)
				}
			}
		})
	}
}
