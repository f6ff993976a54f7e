package main

import (
	"bufio"
	"fmt"
	"go/token"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// module is this module's import path, left off in what is printed.
const module = "github.com/chatmemory/backend"

// storePackage is where a call leaves the code for Firestore.
const storePackage = "cloud.google.com/go/firestore"

// A fn is a function declared in this module (its generic instances
// included), or a function literal in one. The graph keeps literals apart,
// so a callback leads only where its own body does; they are counted as
// the function they are written in, as a reader meets them.
type fn struct {
	key  string // "import/path/file.go:line", as `go tool covdata func` names it
	name string // "*DB.RunTurn", as covdata names it
	line int
	lit  string // the literal's name in SSA ("claimTurn$1"); "" for the function itself
}

// graph holds the calls between the functions that ran, and which of them
// call Firestore's client themselves.
type graph struct {
	calls  map[fn][]fn
	stores map[fn]bool
}

// countPaths prints the functions on the calls from root (as covdata names
// it: "functions/chat.go:*App.chat") to Firestore's client, among the
// functions listing (covdata's func listing) says ran: the code a reader
// follows from the handler through every call to the store. Calls come
// from a static call graph of the module (VTA), so a call that did not run
// between two functions that did is counted too.
func countPaths(w io.Writer, listing, root string, each bool) error {
	ran, err := readRan(listing)
	if err != nil {
		return err
	}
	g, err := load(ran)
	if err != nil {
		return err
	}
	start, ok := findRoot(g, root)
	if !ok {
		return fmt.Errorf("%s did not run (or is not in the listing)", root)
	}
	reached := g.reach(start)
	onPath := g.toStore(reached)
	report(w, "ran from the handler", reached, g, each)
	report(w, "on a call from the handler to Firestore", onPath, g, each)
	return nil
}

// readRan returns the keys of the functions with a statement that ran.
func readRan(listing string) (map[string]string, error) {
	f, err := os.Open(listing)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ran := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		ran[strings.TrimSuffix(fields[0], ":")] = fields[1]
	}
	return ran, sc.Err()
}

// load builds the module's call graph and keeps the functions that ran.
func load(ran map[string]string) (*graph, error) {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	if packages.PrintErrors(pkgs) > 0 {
		return nil, fmt.Errorf("the module does not load")
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	all := ssautil.AllFunctions(prog)
	cg := vta.CallGraph(all, cha.CallGraph(prog))
	g := &graph{calls: map[fn][]fn{}, stores: map[fn]bool{}}
	for f := range all {
		from, ok := declared(prog.Fset, f, ran)
		if !ok {
			continue
		}
		for _, e := range cg.Nodes[f].Out {
			g.add(prog.Fset, from, e, ran)
		}
	}
	return g, nil
}

// add records a call out of from: to a function that ran, or to
// Firestore's client. Wrappers the compiler makes are followed through.
func (g *graph) add(fset *token.FileSet, from fn, e *callgraph.Edge, ran map[string]string) {
	seen := map[*ssa.Function]bool{}
	var follow func(e *callgraph.Edge)
	follow = func(e *callgraph.Edge) {
		callee := e.Callee.Func
		if seen[callee] {
			return
		}
		seen[callee] = true
		if pkg := packageOf(callee); strings.HasPrefix(pkg, storePackage) {
			g.stores[from] = true
			return
		}
		if to, ok := declared(fset, callee, ran); ok {
			if to != from && !slices.Contains(g.calls[from], to) {
				g.calls[from] = append(g.calls[from], to)
			}
			return
		}
		if callee.Synthetic != "" && e.Callee != nil {
			for _, next := range e.Callee.Out {
				follow(next)
			}
		}
	}
	follow(e)
}

// declared names f (a literal as such) by the declared function it is
// written in, if that ran.
func declared(fset *token.FileSet, f *ssa.Function, ran map[string]string) (fn, bool) {
	if f.Origin() != nil {
		f = f.Origin()
	}
	lit := ""
	if f.Parent() != nil {
		lit = f.Name()
	}
	for f.Parent() != nil {
		f = f.Parent()
	}
	if f.Pkg == nil || f.Syntax() == nil {
		return fn{}, false
	}
	pos := fset.Position(f.Syntax().Pos())
	key := f.Pkg.Pkg.Path() + "/" + filepath.Base(pos.Filename) + ":" + strconv.Itoa(pos.Line)
	name, ok := ran[key]
	return fn{key: key, name: name, line: pos.Line, lit: lit}, ok
}

func packageOf(f *ssa.Function) string {
	if f.Pkg != nil {
		return f.Pkg.Pkg.Path()
	}
	if o := f.Object(); o != nil && o.Pkg() != nil {
		return o.Pkg().Path()
	}
	if f.Origin() != nil {
		return packageOf(f.Origin())
	}
	return ""
}

// findRoot finds the function root names ("functions/chat.go:*App.chat").
func findRoot(g *graph, root string) (fn, bool) {
	file, name, _ := strings.Cut(root, ":")
	for f := range g.calls {
		if f.lit == "" && strings.HasSuffix(f.file(), "/"+file) && f.name == name {
			return f, true
		}
	}
	return fn{}, false
}

// reach returns the functions that ran and that start calls, directly or not.
func (g *graph) reach(start fn) map[fn]bool {
	seen := map[fn]bool{start: true}
	todo := []fn{start}
	for len(todo) > 0 {
		f := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, to := range g.calls[f] {
			if !seen[to] {
				seen[to] = true
				todo = append(todo, to)
			}
		}
	}
	return seen
}

// toStore returns those of reached that call Firestore's client or call,
// within reached, a function that does.
func (g *graph) toStore(reached map[fn]bool) map[fn]bool {
	on := map[fn]bool{}
	for f := range reached {
		if g.stores[f] {
			on[f] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for f := range reached {
			if on[f] {
				continue
			}
			for _, to := range g.calls[f] {
				if on[to] {
					on[f], grew = true, true
					break
				}
			}
		}
	}
	return on
}

// report prints how many functions, files and folders set holds, and its
// climbs: calls within set to a function declared higher in the same file.
func report(w io.Writer, title string, set map[fn]bool, g *graph, each bool) {
	calls := declaredCalls(set, g)
	files, folders := map[string]int{}, map[string]int{}
	moves, climbs := 0, []string{}
	for f, to := range calls {
		files[f.file()]++
		folders[f.folder()]++
		moves += len(to)
		for _, t := range to {
			if t.file() == f.file() && t.line < f.line {
				climbs = append(climbs, fmt.Sprintf("%s → %s", short(f), t.name))
			}
		}
	}
	fmt.Fprintf(w, "%s: %d functions in %d files, %d folders; %d calls between them, %d of them climbs back up a file\n",
		title, len(calls), len(files), len(folders), moves, len(climbs))
	for _, d := range slices.Sorted(maps.Keys(folders)) {
		fmt.Fprintf(w, "  %4d  %s\n", folders[d], strings.TrimPrefix(d, module+"/"))
	}
	slices.Sort(climbs)
	for _, c := range climbs {
		fmt.Fprintf(w, "  climb: %s\n", c)
	}
	if each {
		for _, f := range slices.SortedFunc(maps.Keys(calls), byKey) {
			fmt.Fprintf(w, "  %s → %s\n", short(f), strings.Join(names(calls[f]), ", "))
		}
	}
}

func (f fn) folder() string { return path.Dir(f.file()) }

// declaredCalls is set by declared function, each with the other declared
// functions it (or a literal in it) calls within set.
func declaredCalls(set map[fn]bool, g *graph) map[fn][]fn {
	calls := map[fn][]fn{}
	for f := range set {
		from := f.decl()
		if _, ok := calls[from]; !ok {
			calls[from] = nil
		}
		for _, to := range g.calls[f] {
			if set[to] && to.decl() != from && !slices.Contains(calls[from], to.decl()) {
				calls[from] = append(calls[from], to.decl())
			}
		}
	}
	return calls
}

// decl is the declared function f is written in.
func (f fn) decl() fn {
	f.lit = ""
	return f
}

// short names f with its file, as a reader finds it.
func short(f fn) string {
	return strings.TrimPrefix(f.file(), module+"/") + ":" + f.name
}

func (f fn) file() string { return f.key[:strings.LastIndex(f.key, ":")] }

// names lists the names of fs.
func names(fs []fn) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

func byKey(a, b fn) int { return strings.Compare(a.key, b.key) }
