package cache_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/storage"
)

// reads are the methods of storage.Store that write nothing: they pass
// through the cache, which keeps nothing of what they return.
var reads = []string{"AccountsSeenBefore", "CountUnits", "CountExpired", "CountHistoriesDue", "CountPendingPurges",
	"DueJobs", "Embedded", "ExpiredSessions", "FirstMessageAfter", "GetAttachment", "GetSession", "GetUsage", "GetUser",
	"HistoriesDue", "HistoriesToRoll", "HoldersAfter", "LastBacklog", "Lexical", "ListAttachments", "ListCompactions",
	"ListMessages", "ListSessions", "ListSuperseded", "LiveFacts", "MessageRange", "Nearest", "PendingPurges", "Ping",
	"ReadTail", "RollUpMark", "SessionsAfter", "SessionsOf", "SessionsUpdatedSince", "StoredBytes", "UnreferencedAttachments", "UsageOn", "Visibility"}

// untouched are the writes that pass through the cache because they
// change nothing it keeps (a session, its context, a user's slots, spend
// and usage window; the memory block it keeps is read again beside every
// claim planned from it), each with why.
var untouched = map[string]string{
	"SaveDraft":     "a streaming reply's draft: read with each streaming turn, never kept",
	"RequestStop":   "marks a draft; drafts are not kept",
	"SaveUnit":      "the recall index: not kept",
	"SaveMemory":    "long-term memory: its block is read beside every claim from what is kept",
	"EraseMemory":   "likewise",
	"RecordAccount": "the account record: not kept",
	"MarkSeen":      "the account record: not kept",
	"SaveBacklog":   "the sweep's backlog figure: not kept",
	"SetRollUpMark": "the roll-up's mark: not kept",
	"ClaimJob":      "an after-turn job: not kept",
	"FinishJob":     "an after-turn job: not kept",
	// Attachments keep their records and their owner's stored bytes in
	// documents of their own, apart from the usage window the cache keeps.
	"CreateAttachment":      "an attachment's record: not kept",
	"DeleteAttachment":      "an attachment's record: not kept",
	"ReferenceAttachment":   "an attachment's record: not kept",
	"ReserveAttachment":     "the attachments' quota record: not kept",
	"ReleaseAttachment":     "the attachments' quota record: not kept",
	"DeleteAttachmentQuota": "the attachments' quota record: not kept",
}

// TestEveryWriteIsDecided: each method of storage.Store is a read, a
// write the cache handles (a method of cache.Store itself, which drops or
// updates what it kept), or a write declared above not to touch what it
// keeps. A new method of the store fails here until one is decided.
func TestEveryWriteIsDecided(t *testing.T) {
	handled := cacheMethods(t)
	st := reflect.TypeOf((*storage.Store)(nil)).Elem()
	for i := range st.NumMethod() {
		name := st.Method(i).Name
		_, passes := untouched[name]
		n := 0
		for _, in := range []bool{slices.Contains(reads, name), handled[name], passes} {
			if in {
				n++
			}
		}
		switch {
		case n == 0:
			t.Errorf("storage.Store.%s: decide whether it writes what the cache keeps: handle it in cache.Store, or list it in reads or untouched", name)
		case n > 1:
			t.Errorf("storage.Store.%s is decided twice (read %v, handled %v, untouched %v)", name, slices.Contains(reads, name), handled[name], passes)
		}
	}
	hints := reflect.TypeOf((*chat.Hints)(nil)).Elem() // the cache's own: not a store's
	for name := range handled {
		if _, own := hints.MethodByName(name); own {
			continue
		}
		if _, ok := st.MethodByName(name); !ok {
			t.Errorf("cache.Store.%s is not a method of storage.Store", name)
		}
	}
	for _, name := range append(slices.Clone(reads), mapKeys(untouched)...) {
		if _, ok := st.MethodByName(name); !ok {
			t.Errorf("%s is listed but storage.Store has no such method", name)
		}
	}
}

// cacheMethods are the exported methods the cache's own files declare on
// *Store (not those promoted from its Source).
func cacheMethods(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Store" {
					out[fn.Name.Name] = true
				}
			}
		}
	}
	return out
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
