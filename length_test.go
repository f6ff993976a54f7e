package chatmemory

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// maxFileLines is the longest a file of code (tests included) may be.
const maxFileLines = 500

// generated are files a tool writes, left out of TestShortFiles: the web
// client's types, generated from docs/openapi.yaml (npm run check:client
// checks they are current).
var generated = map[string]bool{"web/client/schema.d.ts": true}

// TestShortFiles: no file of code, tests and the web app included, is
// longer than maxFileLines.
func TestShortFiles(t *testing.T) {
	code := []string{"*.go", "*.ts", "*.tsx", "*.mjs", "*.js", "*.sh", "*.css", "*.html"}
	if n := len(tracked(t, code...)); n < 200 {
		t.Fatalf("found %d files of code", n)
	}
	checkFiles(t, code, func(name string) bool { return !generated[name] }, func(name string) ([]string, error) {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // deleted in the working tree
		}
		if n := bytes.Count(data, []byte("\n")); n > maxFileLines {
			return []string{fmt.Sprintf("%d lines, over %d: split it", n, maxFileLines)}, err
		}
		return nil, err
	})
}

// maxFuncLines is the longest a function of production code may be, from
// its func line to its closing brace.
const maxFuncLines = 60

// TestShortFunctions: no function of production code is longer than
// maxFuncLines. Left out are tests and the code only tests run: the
// contract suite (storetest), the benchmarks (bench) and the packages
// named for tests (llmtest, clocktest, …).
func TestShortFunctions(t *testing.T) {
	checkFiles(t, []string{"*.go"}, isProduction, func(name string) ([]string, error) { return longFuncsIn(name, maxFuncLines) })
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
