package main

import (
	"strconv"
	"strings"
	"testing"
)

// f names the function declared in file at line.
func f(file string, line int, name string) fn {
	return fn{key: file + ":" + strconv.Itoa(line), name: name, line: line}
}

// TestPaths counts a small call graph: what the handler reaches, what of
// it leads to the store (not lib: the literal it calls back does not),
// and the calls that climb back up a file.
func TestPaths(t *testing.T) {
	handler := f("m/x/a.go", 10, "handler")
	step := f("m/x/a.go", 20, "step")
	helper := f("m/x/a.go", 5, "helper") // above its caller: a climb
	store := f("m/y/b.go", 10, "store")
	ref := f("m/y/b.go", 30, "ref")
	unreached := f("m/y/b.go", 40, "unreached")
	lib := f("m/z/c.go", 10, "lib") // calls back a literal in the handler
	callback := handler
	callback.lit = "handler$1"
	g := &graph{
		calls: map[fn][]fn{
			handler:   {step, helper, lib},
			lib:       {callback},
			step:      {store},
			store:     {ref},
			unreached: {store},
		},
		stores: map[fn]bool{store: true, ref: true, unreached: true},
	}
	reached := g.reach(handler)
	onPath := g.toStore(reached)
	for _, c := range []struct {
		name string
		set  map[fn]bool
		want string
	}{
		{"ran from the handler", reached,
			"ran from the handler: 6 functions in 3 files, 3 folders; 6 calls between them, 1 of them climbs back up a file\n" +
				"     3  m/x\n     2  m/y\n     1  m/z\n  climb: m/x/a.go:handler → helper\n"},
		{"on a call to the store", onPath,
			"on a call to the store: 4 functions in 2 files, 2 folders; 3 calls between them, 0 of them climbs back up a file\n" +
				"     2  m/x\n     2  m/y\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			report(&b, c.name, c.set, g, false)
			if got := b.String(); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
