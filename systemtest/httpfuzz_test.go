package systemtest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mutate returns a variation of a valid JSON body: a field dropped,
// retyped, set to an extreme, a key added (reserved, unknown, huge), the
// whole replaced or truncated.
func mutate(r *rand.Rand, valid map[string]any) string {
	extremes := []any{nil, "", -1, 0, 1e308, -9223372036854775808, 9223372036854775807, 18446744073709551616.0,
		true, []any{}, map[string]any{}, strings.Repeat("x", 40<<10), "__name__", "\x00\u202e", []any{1, "a", nil}, 0.5}
	keys := []string{"__name__", "__x__", "", "a.b", "`", strings.Repeat("k", 200), "memory", "metadata", "custom", "messages"}
	body := map[string]any{}
	for k, v := range valid {
		body[k] = v
	}
	var walk func(v any, depth int) any
	walk = func(v any, depth int) any {
		if depth > 0 && r.IntN(4) == 0 {
			return extremes[r.IntN(len(extremes))]
		}
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if r.IntN(6) != 0 {
					out[k] = walk(e, depth+1)
				}
			}
			if r.IntN(3) == 0 {
				out[keys[r.IntN(len(keys))]] = extremes[r.IntN(len(extremes))]
			}
			return out
		case []any:
			out := make([]any, 0, len(x))
			for _, e := range x {
				out = append(out, walk(e, depth+1))
			}
			if r.IntN(4) == 0 && len(out) > 0 {
				for i := 0; i < 60; i++ {
					out = append(out, out[0])
				}
			}
			return out
		}
		return v
	}
	data, _ := json.Marshal(walk(body, 0))
	switch r.IntN(10) {
	case 0:
		return string(data[:r.IntN(len(data)+1)]) // truncated
	case 1:
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	case 2:
		return `[` + string(data) + `]`
	}
	return string(data)
}

// TestHTTPFuzz sends every endpoint a bounded number of mutated bodies,
// odd ids and query strings: nothing may answer 5xx (or panic, which
// answers 500), and every error is JSON with a code.
func TestHTTPFuzz(t *testing.T) { onBothStores(t, testHTTPFuzz) }

func testHTTPFuzz(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	alice := h.signUp()
	var s sessionResp
	h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
	r := rand.New(rand.NewPCG(12, 34))
	ids := []string{s.ID, "missing", "__x__", "a%2Fb", strings.Repeat("a", 200), "..", "%00", url.PathEscape("é x")}
	queries := []string{"", "limit=0", "limit=101", "limit=-5", "limit=99999999999999999999", "limit=1.5", "status=purged", "status=",
		"order=sideways", "pageToken=%21", "pageToken=eyJ9", "pageToken=" + strings.Repeat("A", 3000), "limit=1&limit=2"}
	message := map[string]any{"role": "user", "content": "hi", "metadata": map[string]any{"sources": []any{"a"}, "durationMs": 5}}
	toolCall := map[string]any{"role": "assistant", "content": "", "toolCalls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}}
	endpoints := []struct {
		method, path string
		valid        map[string]any // nil: no body
	}{
		{"POST", "/chat", map[string]any{"sessionId": "{id}", "message": "hello", "clientMessageId": "k1", "stream": false}},
		{"POST", "/chat", map[string]any{"message": "hello", "stream": true}},
		{"POST", "/sessions", map[string]any{"title": "t", "retentionDays": 7, "noLearning": true,
			"metadata": map[string]any{"agentType": "a", "topic": "t", "tags": []any{"x"}, "custom": map[string]any{"k": "v"}},
			"memory":   map[string]any{"strategy": "window", "windowExchanges": 3, "budgetTokens": 1000}}},
		{"GET", "/sessions", nil},
		{"GET", "/sessions/{id}", nil},
		{"PATCH", "/sessions/{id}", map[string]any{"title": "t", "metadata": map[string]any{"custom": map[string]any{"k": "v"}}, "memory": map[string]any{"strategy": "token_buffer"}, "noLearning": false}},
		{"POST", "/sessions/{id}/archive", nil},
		{"POST", "/sessions/{id}/restore", nil},
		{"DELETE", "/sessions/{id}", nil},
		{"GET", "/sessions/{id}/messages", nil},
		{"POST", "/sessions/{id}/messages", map[string]any{"messages": []any{message, toolCall}, "clientMessageId": "m1"}},
		{"GET", "/sessions/{id}/context", nil},
		{"GET", "/account/export", nil},
		{"GET", "/memory", nil},
		{"PATCH", "/memory", map[string]any{"enabled": true}},
		{"PATCH", "/memory/profile", map[string]any{"work": "w", "personal": "p", "focus": "f"}},
		{"PATCH", "/memory/history", map[string]any{"recent": "r", "months": "m", "earlier": "e"}},
		{"DELETE", "/memory/facts/{id}", nil},
		{"DELETE", "/memory", nil},
		{"GET", "/healthz", nil},
		{"GET", "/search", nil},
		{"GET", "/usage", nil},
		{"GET", "/models", nil},
		{"PUT", "/sessions/{id}/messages/{id}/feedback", map[string]any{"rating": "up", "comment": "good"}},
		{"DELETE", "/sessions/{id}/messages/{id}/feedback", nil},
		{"POST", "/sessions/{id}/compactions", map[string]any{"fromSeq": 0, "toSeq": 1, "summary": "s"}},
		{"POST", "/sessions/{id}/replies/{id}/stop", nil},
		{"POST", "/sessions/{id}/branch", map[string]any{"seq": 1}},
		{"POST", "/callable/{id}", map[string]any{"data": map[string]any{"sessionId": "{id}"}}},
		{"DELETE", "/account/data", nil},
	}
	// Every route of functions/http.go is fuzzed.
	src, err := os.ReadFile("../functions/http.go")
	if err != nil {
		t.Fatal(err)
	}
	braces := regexp.MustCompile(`\{[^}]+\}`)
	for _, m := range regexp.MustCompile(`(?:authed|handle)\("([A-Z]+) (/[^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		route := m[1] + " " + braces.ReplaceAllString(m[2], "{id}")
		if !slices.ContainsFunc(endpoints, func(ep struct {
			method, path string
			valid        map[string]any
		}) bool {
			return ep.method+" "+ep.path == route
		}) {
			t.Errorf("route %s %s is not fuzzed", m[1], m[2])
		}
	}
	const perEndpoint = 25
	sent := 0
	for _, ep := range endpoints {
		for i := 0; i < perEndpoint; i++ {
			id := ids[r.IntN(len(ids))]
			path := strings.ReplaceAll(ep.path, "{id}", id)
			if q := queries[r.IntN(len(queries))]; q != "" && ep.valid == nil {
				path += "?" + q
			}
			var body any
			if ep.valid != nil {
				valid := map[string]any{}
				for k, v := range ep.valid {
					if v == "{id}" {
						v = id
					}
					valid[k] = v
				}
				body = mutate(r, valid)
			} else if r.IntN(5) == 0 {
				body = mutate(r, map[string]any{"unexpected": 1})
			}
			resp := h.do(ep.method, path, alice.token, body)
			sent++
			if resp.status >= 500 {
				t.Errorf("%s %s with %.200v: %d %s", ep.method, path, body, resp.status, resp.body)
				continue
			}
			if resp.status >= 400 && !strings.HasPrefix(resp.header.Get("Content-Type"), "text/event-stream") && resp.errorCode() == "" {
				t.Errorf("%s %s: %d without an error code: %s", ep.method, path, resp.status, resp.body)
			}
		}
	}
	h.idle()
	if !t.Failed() {
		t.Log(fmt.Sprintf("%d requests, no 5xx", sent))
	}
}
