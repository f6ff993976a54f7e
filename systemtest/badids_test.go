package systemtest_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
)

// TestBadIDs: every id a route takes, in its path, its query or a
// callable's data, is checked before anything reads the database: an id
// Firestore could not store ("__x__", a slash, "..", invalid UTF-8, too
// long) is a 400 naming the parameter, never a 5xx, and nothing is logged
// as a failure. Both stores.
func TestBadIDs(t *testing.T) {
	src, err := os.ReadFile("../functions/http.go")
	if err != nil {
		t.Fatal(err)
	}
	var routes [][2]string
	for _, m := range regexp.MustCompile(`\{"([A-Z]+) (/[^"]*\{[^"]*)", a\.`).FindAllStringSubmatch(string(src), -1) {
		routes = append(routes, [2]string{m[1], m[2]})
	}
	if len(routes) < 15 {
		t.Fatalf("found %d routes with ids in http.go", len(routes))
	}
	bad := []string{"__x__", "__name__", "a%2Fb", "%2E%2E", "x%2F..", "%FF", strings.Repeat("a", 129), "a%20b"}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for _, backend := range []string{"firestore", "memory"} {
		t.Run(backend, func(t *testing.T) {
			h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
			alice := h.signUp()
			var s sessionResp
			h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
			for _, route := range routes {
				for _, name := range param.FindAllStringSubmatch(route[1], -1) {
					for _, id := range bad {
						path := param.ReplaceAllStringFunc(route[1], func(p string) string {
							if p == name[0] {
								return id
							}
							if p == "{name}" {
								return "getSession"
							}
							return s.ID
						})
						t.Run(fmt.Sprintf("%s %s %s", route[0], route[1], id), func(t *testing.T) {
							r := h.do(route[0], path, alice.token, map[string]any{})
							if r.status != 400 && !(name[1] == "name" && r.status == 404) {
								t.Fatalf("%d %s, want 400", r.status, r.body)
							}
							if r.status == 400 && !strings.Contains(string(r.body), name[1]) {
								t.Errorf("%s does not name %s", r.body, name[1])
							}
						})
					}
				}
			}
			for _, id := range []string{"__x__", "a/b", "..", "\xff", strings.Repeat("a", 129)} {
				t.Run("callable "+id, func(t *testing.T) {
					r := h.do("POST", "/callable/setFeedback", alice.token, map[string]any{"data": map[string]any{"sessionId": s.ID, "messageId": id, "rating": "up"}})
					if r.status != 400 || !strings.Contains(string(r.body), "data.messageId") {
						t.Errorf("%d %s, want 400 naming data.messageId", r.status, r.body)
					}
				})
				t.Run("search sessionId "+id, func(t *testing.T) {
					r := h.do("GET", "/search?q=x&sessionId="+strings.ReplaceAll(fmt.Sprintf("%q", id)[1:len(fmt.Sprintf("%q", id))-1], "/", "%2F"), alice.token, nil)
					if r.status != 400 || !strings.Contains(string(r.body), "sessionId") {
						t.Errorf("%d %s, want 400 naming sessionId", r.status, r.body)
					}
				})
			}
			h.idle()
			if logs := h.logs.String(); strings.Contains(logs, `"level":"ERROR"`) {
				t.Errorf("a bad id was logged as a failure:\n%.2000s", logs)
			}
		})
	}
}
