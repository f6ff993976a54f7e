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
