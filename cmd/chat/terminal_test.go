package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI answers as the backend does: /chat for a model that calls the
// first tool it is offered and then answers with the result, and that
// streams "slow" word by word until stopped; search, archive, delete,
// memory and export; any other path is a 404. It records every request
// ("METHOD path") and the /chat bodies.
type fakeAPI struct {
	mu       sync.Mutex
	bodies   []map[string]any
	requests []string
	stopped  chan struct{}
}

func newFakeAPI() *fakeAPI { return &fakeAPI{stopped: make(chan struct{})} }

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	answer := func(body string) { w.Header().Set("Content-Type", "application/json"); fmt.Fprint(w, body) }
	switch r.Method + " " + r.URL.Path {
	case "POST /chat":
		f.chat(w, r)
	case "POST /sessions/s1/replies/r1/stop":
		close(f.stopped)
		w.WriteHeader(http.StatusAccepted)
		answer(`{"stopping":true}`)
	case "GET /search":
		answer(fmt.Sprintf(`{"results":[{"sessionId":"s9","sessionTitle":"Lisbon trip","role":"user","snippet":"about %s\nin May"}]}`, r.URL.Query().Get("q")))
	case "POST /sessions/s1/archive", "DELETE /sessions/s1":
		answer(`{"id":"s1"}`)
	case "GET /memory":
		answer(`{"enabled":true,"profile":{"work":{"text":"builds chat apps"}},"facts":[{"id":"f1","content":"is vegetarian","category":"personal"}]}`)
	case "GET /account/export":
		answer(`{"userId":"u1","sessions":[]}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"session nope not found"}}`)
	}
}

func (f *fakeAPI) chat(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		w.(http.Flusher).Flush()
	}
	send("session", `{"sessionId":"s1","replyId":"r1"}`)
	if results, ok := body["toolResults"].([]any); ok {
		send("delta", fmt.Sprintf(`{"text":"the tool said %s"}`, results[0].(map[string]any)["content"]))
		send("done", `{"sessionId":"s1","status":"completed","reply":{"metadata":{"model":"offline-stand-in"}}}`)
		return
	}
	if tools, ok := body["tools"].([]any); ok {
		name := tools[0].(map[string]any)["name"]
		send("tool_calls", fmt.Sprintf(`{"toolCalls":[{"id":"call_1","function":{"name":%q,"arguments":"{\"text\":\"where?\"}"}}]}`, name))
		send("done", `{"sessionId":"s1","status":"requires_action"}`)
		return
	}
	if body["message"] == "slow" {
		for i := 0; ; i++ {
			select {
			case <-f.stopped:
				return
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				send("delta", fmt.Sprintf(`{"text":"word%d "}`, i))
			}
		}
	}
	send("delta", `{"text":"hello"}`)
	send("done", `{"sessionId":"s1","status":"completed","reply":{"metadata":{"model":"offline-stand-in"}}}`)
}

func (f *fakeAPI) saw(request string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if r == request {
			return true
		}
	}
	return false
}

// fixedToken is a token the API always takes.
type fixedToken struct{}

func (fixedToken) token(context.Context) (string, error) { return "t", nil }
func (fixedToken) renew(context.Context) error           { return nil }

// script is input typed line by line (each line its own message, as when
// the input is not a terminal), ended.
func script(text string) input {
	lines := make(chan string, 64)
	for _, l := range strings.SplitAfter(text, "\n") {
		if l != "" {
			lines <- strings.TrimSuffix(l, "\n")
		}
	}
	close(lines)
	return input{lines: lines}
}

// TestTerminal: the terminal client lists its commands, shows a tool call
// by name and arguments and answers it with the result typed by hand,
// prints an API error as one readable line, gives the usage of a command
// missing its argument, sends a fenced or pasted paragraph as one message,
// searches, archives, deletes, shows memory and exports, and says once
// per session that the offline stand-in answers.
func TestTerminal(t *testing.T) {
	export := filepath.Join(t.TempDir(), "export.json")
	for _, tc := range []struct {
		name, input string
		out, errs   []string
		sent        string // the last /chat body's message or tool result, if any
		requests    []string
		turns       int // how many /chat bodies, when it matters
	}{
		{"help", "/help\n", []string{"/tool NAME", "/search WORDS", "/help", "/quit", `"""`}, nil, "", nil, 0},
		{"a tool round by hand", "/tool lookup_order\nwhere is my order?\nshipped Monday\n", []string{"tool lookup_order is offered",
			`assistant> (calls lookup_order {"text":"where?"})`, "result of lookup_order> ", "assistant> the tool said shipped Monday", "(session s1)"}, nil, "shipped Monday", nil, 2},
		{"an API error", "/resume nope\n", nil, []string{"chat: session nope not found (HTTP 404): not_found\n"}, "", nil, 0},
		{"an unknown command", "/frobnicate\n", []string{"/help lists them"}, nil, "", nil, 0},
		{"/edit without text", "/edit\n/edit   \n", []string{"usage: /edit TEXT  (send your last message anew as TEXT)"}, nil, "", nil, 0},
		{"/search without words", "/search\n", []string{"usage: /search WORDS"}, nil, "", nil, 0},
		{"a fenced paragraph", "\"\"\"\nfirst line\n/second line\n\"\"\"\n", []string{"assistant> hello"}, nil, "first line\n/second line", nil, 1},
		{"a bracketed paste", "\x1b[200~one\ntwo\nthree\x1b[201~\n", []string{"assistant> hello"}, nil, "one\ntwo\nthree", nil, 1},
		{"the stand-in noted once", "hi\nagain\n", []string{"offline stand-in model"}, nil, "again", nil, 0},
		{"search", "/search lisbon\n", []string{"s9  Lisbon trip\n    user: about lisbon in May"}, nil, "", []string{"GET /search"}, 0},
		{"archive and delete", "hi\n/archive\n/delete s1\n", []string{"session s1 archived", "session s1 deleted"}, nil, "", []string{"POST /sessions/s1/archive", "DELETE /sessions/s1"}, 0},
		{"archive with no session", "/archive\n", nil, []string{"no session yet"}, "", nil, 0},
		{"memory", "/memory\n", []string{"memory is on", "work: builds chat apps", "- is vegetarian (personal)"}, nil, "", []string{"GET /memory"}, 0},
		{"export", "/export " + export + "\n", []string{"bytes to " + export}, nil, "", []string{"GET /account/export"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI()
			srv := httptest.NewServer(api)
			defer srv.Close()
			var out, errs strings.Builder
			term := &terminal{api: &client{base: srv.URL, auth: fixedToken{}}, in: script(tc.input), out: &out, errs: &errs}
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
			if n := strings.Count(out.String(), "offline stand-in model"); n > 1 {
				t.Errorf("the stand-in noted %d times", n)
			}
			if strings.Contains(out.String(), "assistant> \n") {
				t.Errorf("an empty reply line:\n%s", out.String())
			}
			if tc.sent != "" {
				last := api.bodies[len(api.bodies)-1]
				got := last["message"]
				if r, ok := last["toolResults"].([]any); ok {
					got = r[0].(map[string]any)["content"]
				}
				if got != tc.sent || tc.turns > 0 && len(api.bodies) != tc.turns {
					t.Errorf("sent %d bodies, the last %v", len(api.bodies), last)
				}
			}
			for _, r := range tc.requests {
				if !api.saw(r) {
					t.Errorf("no %s in %v", r, api.requests)
				}
			}
		})
	}
	if b, err := os.ReadFile(export); err != nil || !strings.Contains(string(b), `"userId":"u1"`) {
		t.Errorf("export: %s, %v", b, err)
	}
}
