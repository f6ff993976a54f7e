package functions

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// readmeSection is the text of README's section headed title.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README has no section %q", title)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section
}

var endpointRow = regexp.MustCompile("(?m)^\\| (GET|POST|PUT|PATCH|DELETE) \\| `([^`]+)` \\|[^|]+\\| ([0-9, ]+) \\|$")

// TestReadmeEndpoints: README's table of endpoints lists every route the
// server serves, each with the statuses docs/openapi.yaml documents for it,
// and nothing else.
func TestReadmeEndpoints(t *testing.T) {
	readme := map[string]string{} // "METHOD path" → statuses
	for _, m := range endpointRow.FindAllStringSubmatch(readmeSection(t, "The API at a glance"), -1) {
		readme[m[1]+" "+m[2]] = m[3]
	}
	served := []string{"GET /healthz"}
	for _, rt := range (&App{}).routes() {
		served = append(served, rt.pattern)
	}
	doc, err := openapi3.NewLoader().LoadFromFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			var codes []string
			for code := range op.Responses.Map() {
				if code != "default" {
					codes = append(codes, code)
				}
			}
			sort.Strings(codes)
			documented[method+" "+path] = strings.Join(codes, ", ")
		}
	}
	for _, ep := range served {
		switch got, ok := readme[ep]; {
		case !ok:
			t.Errorf("README's table lacks %s", ep)
		case documented[ep] == "":
			t.Errorf("docs/openapi.yaml lacks %s", ep)
		case got != documented[ep]:
			t.Errorf("%s: README says %s, docs/openapi.yaml %s", ep, got, documented[ep])
		}
	}
	for ep := range readme {
		if !slices.Contains(served, ep) {
			t.Errorf("README lists %s, which the server does not serve", ep)
		}
	}
	if len(readme) < 30 {
		t.Fatalf("read %d endpoints from README", len(readme))
	}
}

// TestReadmeErrors: README's table of errors has every code the server
// answers with, at the status it is answered with.
func TestReadmeErrors(t *testing.T) {
	section := readmeSection(t, "The API at a glance")
	for code, a := range answers {
		row := regexp.MustCompile("(?m)^\\|[^|]*`" + regexp.QuoteMeta(string(code)) + "`[^|]*\\| ([0-9]+) \\|")
		m := row.FindStringSubmatch(section)
		if m == nil || m[1] != strconv.Itoa(a.http) {
			t.Errorf("README's errors: %s should be answered %d (%v)", code, a.http, m)
		}
	}
}
