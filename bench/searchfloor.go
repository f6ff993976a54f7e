package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/recall"
)

// SearchFloor is what each RPC of a search costs the emulator alone, one
// after another, in the database the searches ran in: the vector query
// (the meaning leg, 20 nearest of the user's units), a term's query (40
// of the user's units holding it, each term of the question), the read of
// the user's list (one document by id); beside them, what bounds any
// query there: a query of a collection that holds nothing, in that
// database and in an empty project of the same emulator. A search waits
// at least for its vector query.
type SearchFloor struct {
	Vector       Latency `json:"vector"`
	Term         Latency `json:"term"`
	List         Latency `json:"list"`
	EmptyQuery   Latency `json:"emptyQuery"`
	EmptyProject Latency `json:"emptyProject"`
}

// querier is a query or a vector query.
type querier interface {
	Documents(context.Context) *firestore.DocumentIterator
}

// floor times each RPC of searches of the fixture's questions alone.
func (s scaleRun) floor(ctx context.Context, searches int, qs []convQuestion) (*SearchFloor, error) {
	empty, err := firestoretest.Dial(ctx, fmt.Sprintf("demo-bench-empty-%d", time.Now().UnixNano()), nil)
	if err != nil {
		return nil, err
	}
	defer empty.Close()
	embedder := searchEmbedder()
	took := map[string][]float64{}
	timed := func(what string, q querier) error {
		at := time.Now()
		_, err := q.Documents(ctx).GetAll()
		took[what] = append(took[what], ms(time.Since(at)))
		return err
	}
	for i := range searches {
		q, u := s.question(qs, i)
		uid := uidOf(s.tokens[u])
		units := s.client.Collection(firestoredb.UsageCollection).Doc(firestoredb.UserDocID(uid)).Collection(firestoredb.RecallCollection).Query
		v, err := embedder.Embed(ctx, []string{q.query})
		if err != nil {
			return nil, err
		}
		at := time.Now()
		if err := readList(ctx, s.client, uid); err != nil {
			return nil, err
		}
		took["list"] = append(took["list"], ms(time.Since(at)))
		for what, fq := range map[string]querier{
			"vector":       nearestQuery(units, v[0]),
			"emptyQuery":   s.client.Collection("bench_nothing").Limit(5),
			"emptyProject": empty.Collection("bench_nothing").Limit(5),
		} {
			if err := timed(what, fq); err != nil {
				return nil, err
			}
		}
		for _, t := range recall.QueryTerms(q.query) {
			if err := timed("term", termQuery(units, t)); err != nil {
				return nil, err
			}
		}
	}
	at := func(what string) Latency { return Latency{percentile(took[what], 50), percentile(took[what], 95)} }
	return &SearchFloor{Vector: at("vector"), Term: at("term"), List: at("list"), EmptyQuery: at("emptyQuery"), EmptyProject: at("emptyProject")}, nil
}

// writeFloor prints it.
func writeFloor(w io.Writer, f *SearchFloor) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "Each RPC of a search alone, one after another, in the same database (p50 / p95): what bounds a search on the emulator:\n\n| RPC | p50 | p95 |\n|---|---|---|\n")
	for _, r := range []struct {
		what string
		l    Latency
	}{
		{"the vector query (20 nearest of the user's units)", f.Vector},
		{"a term's query (40 of the user's units holding it)", f.Term},
		{"the read of the user's list (one document by id)", f.List},
		{"a query of an empty collection, same database", f.EmptyQuery},
		{"a query of an empty collection, an empty project of the same emulator", f.EmptyProject},
	} {
		fmt.Fprintf(w, "| %s | %.1f ms | %.1f ms |\n", r.what, r.l.P50Ms, r.l.P95Ms)
	}
	fmt.Fprintln(w)
}
