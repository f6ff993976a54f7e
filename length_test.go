package chatmemory

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of production code may be, from
// its func line to its closing brace.
const maxFuncLines = 60

// TestShortFunctions: no function of production code is longer than
// maxFuncLines. Left out are tests and the code only tests run: the
// contract suite (storetest), the benchmarks (bench) and the packages
// named for tests (llmtest, clocktest, …).
func TestShortFunctions(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files (the test runs in a checkout): %v", err)
	}
	checked := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if !isProduction(name) {
			continue
		}
		long, err := longFuncsIn(name, maxFuncLines)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, l := range long {
			t.Errorf("%s: %s", name, l)
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files", checked)
	}
}

// isProduction tells whether the Go file name is production code.
func isProduction(name string) bool {
	if strings.HasSuffix(name, "_test.go") {
		return false
	}
	dirs := strings.Split(name, "/")
	for _, d := range dirs[:len(dirs)-1] {
		if d == "storetest" || d == "bench" || strings.HasSuffix(d, "test") {
			return false
		}
	}
	return true
}

// longFuncsIn lists the functions of file longer than max lines.
func longFuncsIn(file string, max int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > max {
			out = append(out, fmt.Sprintf("%s has %d lines", funcKey(fd), n))
		}
	}
	return out, nil
}
