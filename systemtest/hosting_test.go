package systemtest_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/storetest"
)

// TestHostingRewrites: firebase.json's hosting section sends every API
// route to the api function, so a web app hosted on Firebase Hosting calls
// the API on its own origin (no CORS), and a route added to the API
// cannot be forgotten there.
func TestHostingRewrites(t *testing.T) {
	var cfg struct {
		Hosting struct {
			Public   string `json:"public"`
			Rewrites []struct {
				Source   string `json:"source"`
				Function struct {
					FunctionID string `json:"functionId"`
				} `json:"function"`
			} `json:"rewrites"`
		} `json:"hosting"`
	}
	data, err := os.ReadFile("../firebase.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Hosting.Public != "web" {
		t.Errorf("hosting serves %q, want the web app", cfg.Hosting.Public)
	}
	var sources []*regexp.Regexp
	for _, r := range cfg.Hosting.Rewrites {
		if r.Function.FunctionID != "api" {
			t.Errorf("rewrite %s goes to %q, want the api function", r.Source, r.Function.FunctionID)
		}
		glob := regexp.QuoteMeta(r.Source)
		glob = strings.ReplaceAll(glob, `\*\*`, ".*")
		glob = strings.ReplaceAll(glob, `\*`, "[^/]*")
		sources = append(sources, regexp.MustCompile("^"+glob+"$"))
	}
	src, err := os.ReadFile("../functions/http.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`(?:\{|handle\()"[A-Z]+ (/[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found %d routes in http.go", len(routes))
	}
	// The local server sends these paths to the API, the rest to the files.
	backend := app.New(testConfig(), app.Deps{Store: inprocdb.New(), Model: llm.Offline{}, Tokens: storetest.Tokens(t)})
	prefixes := backend.Edge.APIPrefixes()
	slices.Sort(prefixes)
	if want := []string{"/account", "/ai-sdk", "/attachments", "/callable", "/chat", "/healthz", "/memory", "/models", "/search", "/sessions", "/usage"}; !slices.Equal(prefixes, want) {
		t.Errorf("API prefixes %v, want %v", prefixes, want)
	}
	for _, m := range routes {
		path := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(m[1], "x")
		covered := false
		for _, s := range sources {
			covered = covered || s.MatchString(path)
		}
		if !covered {
			t.Errorf("%s (route %s) is not rewritten to the api function in firebase.json", path, m[1])
		}
	}
}
