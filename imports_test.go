package chatmemory

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestNoTestCodeInProduction: no production package imports testing,
// net/http/httptest or one of the project's test helpers (packages named
// …test); only the benchmark may use the helpers (a fake model server and
// the Firestore call counter).
func TestNoTestCodeInProduction(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/chatmemory/backend"
	helper := func(p string) bool {
		return strings.HasPrefix(p, module+"/") && strings.HasSuffix(path.Base(p), "test")
	}
	benchmark := map[string]bool{module + "/bench": true, module + "/cmd/bench": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, name, imports := f[0], f[1], f[2:]
		if strings.HasSuffix(name, "test") {
			continue // a test helper itself
		}
		checked++
		for _, imp := range imports {
			switch {
			case imp == "testing" || imp == "net/http/httptest":
				t.Errorf("%s imports %s", pkg, imp)
			case helper(imp) && !benchmark[pkg]:
				t.Errorf("%s imports the test helper %s", pkg, imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages", checked)
	}
}

// TestLayers: dependencies point one way. Each package may import only the
// packages of ours listed for it, and the domain (kernel, prompts,
// sessions, history, chat, longterm, retention) nothing of HTTP, Firestore, Firebase
// or OpenAI.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/chatmemory/backend"
	domain := []string{"kernel", "prompts", "sessions", "history", "chat", "longterm", "retention"}
	stores := append([]string{"firestoredb", "inprocdb"}, domain...)
	allowed := map[string][]string{ // package → the packages of ours it may import (by prefix)
		"kernel":      {"kernel"},
		"prompts":     {},
		"sessions":    {"kernel"},
		"history":     {"kernel", "prompts", "sessions"},
		"longterm":    {"kernel", "prompts", "sessions", "history"},
		"retention":   {"kernel", "sessions", "history"},
		"chat":        {"kernel", "sessions", "history", "longterm"},
		"llm":         {"kernel", "prompts", "chat", "history"},
		"firestoredb": domain,
		"inprocdb":    domain,
		"storetest":   append([]string{"firestoredb", "inprocdb", "emulator/emulatortest"}, domain...),
		"functions":   append([]string{"llm"}, stores...),
		"emulator":    {"emulator"},
		"rules":       {"emulator"},
		"cmd":         {"functions", "emulator", "bench", "llm/llmtest"},
		"bench":       append([]string{"functions", "llm", "firestoredb/firestoretest"}, stores...),
		"":            {"functions"}, // the root: registration only
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
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		top, _, _ := strings.Cut(pkg, "/")
		may, ok := allowed[pkg]
		if !ok {
			may, ok = allowed[top]
		}
		if !ok {
			t.Errorf("%s: no layer is declared for it in this test", f[0])
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if ours, found := strings.CutPrefix(imp, module+"/"); found && ours != pkg && !under(ours, may) {
				t.Errorf("%s imports %s", f[0], imp)
			}
			if under(top, domain) && under(imp, foreign) {
				t.Errorf("domain package %s imports %s", f[0], imp)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d packages", checked)
	}
}
