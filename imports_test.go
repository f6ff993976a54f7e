package chatmemory

import (
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/chatmemory/backend"

// pkg is one package of the module, as go list reports it.
type pkg struct {
	path, name string
	imports    []string
}

// packages lists the module's packages once for every test here.
var packages = sync.OnceValues(func() ([]pkg, error) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		return nil, err
	}
	var ps []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		ps = append(ps, pkg{path: f[0], name: f[1], imports: f[2:]})
	}
	return ps, nil
})

func listPackages(t *testing.T) []pkg {
	t.Helper()
	ps, err := packages()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return ps
}

// TestNoTestCodeInProduction: no production package imports testing,
// net/http/httptest or one of the project's test helpers (packages named
// …test); only the benchmark may use the helpers (a fake model server and
// the Firestore call counter).
func TestNoTestCodeInProduction(t *testing.T) {
	helper := func(p string) bool {
		return strings.HasPrefix(p, module+"/") && strings.HasSuffix(path.Base(p), "test")
	}
	benchmark := map[string]bool{module + "/bench": true, module + "/cmd/bench": true}
	checked := 0
	for _, p := range listPackages(t) {
		if strings.HasSuffix(p.name, "test") {
			continue // a test helper itself
		}
		checked++
		for _, imp := range p.imports {
			switch {
			case imp == "testing" || imp == "net/http/httptest":
				t.Errorf("%s imports %s", p.path, imp)
			case helper(imp) && !benchmark[p.path]:
				t.Errorf("%s imports the test helper %s", p.path, imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages", checked)
	}
}

// TestLayers: dependencies point one way. Each package may import only the
// packages of ours listed for it, and the domain (kernel, prompts,
// sessions, history, chat, longterm, retention, recall, attachments) nothing of HTTP,
// Firestore, Firebase or OpenAI.
func TestLayers(t *testing.T) {
	domain := []string{"kernel", "prompts", "sessions", "history", "chat", "longterm", "retention", "recall", "attachments"}
	stores := append([]string{"cache", "firestoredb", "inprocdb", "storage", "gcsblob"}, domain...)
	allowed := map[string][]string{ // package → the packages of ours it may import (by prefix)
		"kernel":      {"kernel"},
		"prompts":     {},
		"sessions":    {"kernel"},
		"history":     {"kernel", "prompts", "sessions"},
		"longterm":    {"kernel", "prompts", "sessions", "history"},
		"retention":   {"kernel", "sessions", "history"},
		"chat":        {"kernel", "sessions", "history", "longterm", "recall", "attachments"},
		"recall":      {"kernel", "sessions", "history"},
		"attachments": {"kernel"},
		"gcsblob":     {"kernel", "attachments"},
		"llm":         {"kernel", "prompts", "chat", "history", "recall"},
		"storage":     domain,
		"cache":       append([]string{"storage"}, domain...), // a store in front of a store
		"firestoredb": domain,
		"inprocdb":    domain,
		"storetest":   append([]string{"firestoredb", "inprocdb", "storage", "emulator/emulatortest"}, domain...),
		"functions":   append([]string{"llm"}, domain...),              // the HTTP edge: no store, no wiring
		"app":         append([]string{"functions", "llm"}, stores...), // the composition root
		"emulator":    {"emulator"},
		"rules":       {"emulator"},
		"cmd":         {"app", "functions", "emulator", "bench", "llm/llmtest", "cmd/internal"},
		"bench":       append([]string{"app", "functions", "llm", "firestoredb/firestoretest", "emulator"}, stores...),
		"systemtest":  {},      // whole-system tests: test files only, which may import anything
		"":            {"app"}, // the root: registration only
	}
	foreign := []string{"net/http", "cloud.google.com", "firebase.google.com", "github.com/sashabaranov/go-openai"}
	under := func(p string, prefixes []string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.path, module), "/")
		top, _, _ := strings.Cut(rel, "/")
		may, ok := allowed[top]
		if !ok {
			t.Errorf("%s: no layer is declared for it in this test", p.path)
			continue
		}
		checked++
		for _, imp := range p.imports {
			if ours, found := strings.CutPrefix(imp, module+"/"); found && ours != rel && !under(ours, may) {
				t.Errorf("%s imports %s", p.path, imp)
			}
			if under(top, domain) && under(imp, foreign) {
				t.Errorf("domain package %s imports %s", p.path, imp)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d packages", checked)
	}
}
