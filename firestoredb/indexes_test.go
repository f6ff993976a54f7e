package firestoredb

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// indexConfig is firestore.indexes.json, as far as this test reads it.
type indexConfig struct {
	Indexes []struct {
		CollectionGroup string `json:"collectionGroup"`
		QueryScope      string `json:"queryScope"`
		Fields          []struct {
			FieldPath    string          `json:"fieldPath"`
			VectorConfig json.RawMessage `json:"vectorConfig"`
		} `json:"fields"`
	} `json:"indexes"`
	FieldOverrides []struct {
		CollectionGroup string            `json:"collectionGroup"`
		FieldPath       string            `json:"fieldPath"`
		Indexes         []json.RawMessage `json:"indexes"`
	} `json:"fieldOverrides"`
}

// TestIndexExemptions: every field the code filters or orders on keeps its
// index, and every array, map or long-text field of a stored document is
// exempt from indexing (Firestore's advice for write latency, and the
// production limit of 40,000 index entries per document, which the
// emulator does not enforce).
func TestIndexExemptions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "firestore.indexes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg indexConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	exempt := map[string]bool{} // group/field
	for _, o := range cfg.FieldOverrides {
		if len(o.Indexes) == 0 {
			exempt[o.CollectionGroup+"/"+o.FieldPath] = true
		}
	}

	// Fields the code queries on, by any collection: none may be exempt
	// anywhere, nor may a composite index use an exempt field.
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	queried := map[string]bool{}
	re := regexp.MustCompile(`\b(?:Where|OrderBy)\("([A-Za-z.]+)"`)
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			queried[strings.TrimSuffix(m[1], ".")] = true // "has."+term: the map has
		}
	}
	if len(queried) == 0 {
		t.Fatal("found no queries in the package: the pattern is stale")
	}
	// A vector search needs a vector index with its pre-filter fields,
	// of the length exchanges are embedded at by default.
	var searched bool
	for _, ix := range cfg.Indexes {
		fields := map[string]bool{}
		var dim struct {
			Dimension int `json:"dimension"`
		}
		for _, f := range ix.Fields {
			fields[f.FieldPath] = true
			if f.VectorConfig != nil {
				json.Unmarshal(f.VectorConfig, &dim)
			}
		}
		if ix.CollectionGroup == RecallCollection && ix.QueryScope == "COLLECTION" && fields["embedding"] && dim.Dimension == 512 {
			searched = true
		}
	}
	if !searched {
		t.Error("no vector index on recall.embedding (512 dimensions) of a user's collection, as Nearest's query needs")
	}
	for key := range exempt {
		if queried[key[strings.Index(key, "/")+1:]] {
			t.Errorf("%s is exempt from indexing but a query uses it", key)
		}
	}
	vectors := map[string]bool{} // group/field searched by a vector index
	for _, ix := range cfg.Indexes {
		for _, f := range ix.Fields {
			if f.VectorConfig != nil {
				vectors[ix.CollectionGroup+"/"+f.FieldPath] = true
			}
			if exempt[ix.CollectionGroup+"/"+f.FieldPath] {
				t.Errorf("a composite index on %s uses exempt field %s", ix.CollectionGroup, f.FieldPath)
			}
		}
	}

	// Large fields: arrays, maps and nested documents, and long text.
	longText := map[string]bool{"content": true, "summary": true, "block": true}
	docs := map[string][]any{
		SessionsCollection:    {sessionDoc{}},
		MessagesCollection:    {messageDoc{}},
		ContextCollection:     {tailDoc{}},
		CompactionsCollection: {compactionDoc{}},
		UsersCollection:       {memoryUserDoc{}},
		FactsCollection:       {factDoc{}},
		RecallCollection:      {unitDoc{}},
	}
	timeType := reflect.TypeOf(time.Time{})
	for group, types := range docs {
		for _, doc := range types {
			for _, f := range topFields(reflect.TypeOf(doc)) {
				ft := f.typ
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				large := longText[f.name]
				switch ft.Kind() {
				case reflect.Slice, reflect.Map:
					large = true
				case reflect.Struct:
					large = ft != timeType
				}
				if large && !exempt[group+"/"+f.name] && !queried[f.name] && !vectors[group+"/"+f.name] {
					t.Errorf("%s.%s (%s) is large and indexed: exempt it in firestore.indexes.json", group, f.name, ft)
				}
			}
		}
	}
}

type field struct {
	name string
	typ  reflect.Type
}

// topFields lists a document struct's stored fields, embedded ones
// included.
func topFields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("firestore"), ",")
		switch {
		case name == "-", !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "":
			out = append(out, topFields(f.Type)...)
		default:
			if name == "" {
				name = f.Name
			}
			out = append(out, field{name, f.Type})
		}
	}
	return out
}
