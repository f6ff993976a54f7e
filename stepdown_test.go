package chatmemory

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStepdown: a reader goes down a file, not back up. In every file of
// production code, each function is declared below the functions of the
// same file that call it, unless they call each other (recursion: one of
// them has to be above). Calls are found by name: a function of the file,
// or a method of the receiver's type called on the receiver.
func TestStepdown(t *testing.T) {
	checkFiles(t, []string{"*.go"}, func(name string) bool { return !strings.HasSuffix(name, "_test.go") }, climbsIn)
}

// checkFiles runs check on each file of the checkout matching patterns
// that keep keeps, and fails t with each problem check lists.
func checkFiles(t *testing.T, patterns []string, keep func(name string) bool, check func(name string) ([]string, error)) {
	t.Helper()
	checked := 0
	for _, name := range tracked(t, patterns...) {
		if !keep(name) {
			continue
		}
		problems, err := check(name)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, p := range problems {
			t.Errorf("%s: %s", name, p)
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files", checked)
	}
}

// tracked lists the files git tracks in the checkout that match patterns
// (every one, without).
func tracked(t *testing.T, patterns ...string) []string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"ls-files", "-z"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("git ls-files (the test runs in a checkout): %v", err)
	}
	return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
}

// climbsIn lists the calls in file to a function declared above the
// caller that does not call it back, directly or not.
func climbsIn(file string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	line := map[string]int{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			line[funcKey(fd)] = fset.Position(fd.Pos()).Line
		}
	}
	calls := map[string][]string{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			from := funcKey(fd)
			for _, to := range calledIn(fd) {
				if _, ours := line[to]; ours && to != from && !slices.Contains(calls[from], to) {
					calls[from] = append(calls[from], to)
				}
			}
		}
	}
	var climbs []string
	for from, tos := range calls {
		for _, to := range tos {
			if line[to] < line[from] && !reaches(calls, to, from) {
				climbs = append(climbs, fmt.Sprintf("%s (line %d) calls %s, declared above it (line %d)", from, line[from], to, line[to]))
			}
		}
	}
	return climbs, nil
}

// funcKey names a declared function: "name", or "Type.name" for a method.
func funcKey(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return recvType(fd.Recv.List[0].Type) + "." + fd.Name.Name
}

// recvType is the name of a receiver's type, without * or type parameters.
func recvType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvType(x.X)
	case *ast.IndexExpr:
		return recvType(x.X)
	case *ast.IndexListExpr:
		return recvType(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// calledIn lists what fd calls by name: functions, and its receiver's
// methods called on the receiver.
func calledIn(fd *ast.FuncDecl) []string {
	recv, typ := "", ""
	if fd.Recv != nil && len(fd.Recv.List) > 0 && len(fd.Recv.List[0].Names) > 0 {
		recv, typ = fd.Recv.List[0].Names[0].Name, recvType(fd.Recv.List[0].Type)
	}
	var out []string
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fun := call.Fun
		switch x := fun.(type) { // a generic function's instance
		case *ast.IndexExpr:
			fun = x.X
		case *ast.IndexListExpr:
			fun = x.X
		}
		switch x := fun.(type) {
		case *ast.Ident:
			out = append(out, x.Name)
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && recv != "" && id.Name == recv {
				out = append(out, typ+"."+x.Sel.Name)
			}
		}
		return true
	})
	return out
}

// reaches reports whether from calls to, directly or not.
func reaches(calls map[string][]string, from, to string) bool {
	seen := map[string]bool{}
	todo := []string{from}
	for len(todo) > 0 {
		f := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if f == to {
			return true
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		todo = append(todo, calls[f]...)
	}
	return false
}

// TestClimbsIn: what TestStepdown flags, on small files.
func TestClimbsIn(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"callee below", "func a() { b() }\nfunc b() {}", 0},
		{"callee above", "func b() {}\nfunc a() { b() }", 1},
		{"each other", "func b() { a() }\nfunc a() { b() }", 0},
		{"method on the receiver", "type T struct{}\nfunc (t *T) b() {}\nfunc (t *T) a() { t.b() }", 1},
		{"method on another value", "type T struct{}\nfunc (t *T) b() {}\nfunc (t *T) a(u *T) { u.b() }", 0},
		{"generic instance", "func b[X any]() {}\nfunc a() { b[int]() }", 1},
		{"called twice, counted once", "func b() {}\nfunc a() { b(); b() }", 1},
		{"another file's function", "func a() { fmt.Println() }", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "x.go")
			if err := os.WriteFile(file, []byte("package x\n"+tc.src+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := climbsIn(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Errorf("climbs = %q, want %d", got, tc.want)
			}
		})
	}
}
