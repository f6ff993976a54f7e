package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
)

// SearchCost is what a search costs Firestore, on the dev part of the
// search fixture stored in the emulator: documents read and RPCs, per
// search (mean and most), and how many RPCs followed one another after the
// query's embedding. (Latency is not read from the emulator: its vector
// search scans every user's vectors, where production pre-filters.)
type SearchCost struct {
	Searches  int     `json:"searches"`
	ReadsMean float64 `json:"readsMean"`
	ReadsMax  int64   `json:"readsMax"`
	RPCsMean  float64 `json:"rpcsMean"`
	// Round trips one after another, told by their times: the median
	// (what the code does) and the most (what a loaded machine's
	// scheduler made of it once).
	SequentialP50 int `json:"sequentialRoundTripsP50"`
	SequentialMax int `json:"sequentialRoundTripsMax"`
	// Latency on the emulator (it scans where production uses indexes:
	// what make dev and the web app's search box wait for, not
	// production's figure), and how many units the user has.
	Units int     `json:"units"`
	P50Ms float64 `json:"p50Ms"`
	P95Ms float64 `json:"p95Ms"`
}

// MeasureSearchCost stores the fixture's dev part in a fresh emulator
// project through the backend's services and counts what each of its
// questions' searches does.
func MeasureSearchCost(ctx context.Context, e recall.Embedder, tok history.Counter) (*SearchCost, error) {
	counter := &firestoretest.Counter{}
	client, err := firestoretest.Dial(ctx, fmt.Sprintf("demo-bench-search-%d", time.Now().UnixNano()), counter)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	db := firestoredb.New(client)
	svc := &recall.Service{Embedder: e, Store: db}
	fx, qs := buildFixture(devPart, devSessions, fixtureExchanges, 1)
	if _, err := storeFixture(ctx, db, tok, svc, fx); err != nil {
		return nil, err
	}
	c := &SearchCost{Searches: len(qs), Units: len(fx) * fixtureExchanges}
	var depths, took []float64
	for _, q := range qs {
		before, start := counter.Snapshot(), time.Now()
		if _, err := svc.Search(ctx, "alice", q.query, "", 10); err != nil {
			return nil, err
		}
		took = append(took, ms(time.Since(start)))
		d := counter.Snapshot().Sub(before)
		c.ReadsMean += float64(d.Reads)
		c.ReadsMax = max(c.ReadsMax, d.Reads)
		c.RPCsMean += float64(d.RoundTrips)
		depth := counter.Depth(start, time.Now())
		c.SequentialMax = max(c.SequentialMax, depth)
		depths = append(depths, float64(depth))
	}
	c.SequentialP50 = int(percentile(depths, 50))
	c.P50Ms, c.P95Ms = percentile(took, 50), percentile(took, 95)
	c.ReadsMean /= float64(len(qs))
	c.RPCsMean /= float64(len(qs))
	return c, nil
}

// WriteSearchCost prints it.
func WriteSearchCost(w io.Writer, c *SearchCost) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "What a search costs Firestore (%d searches of the dev part, stored in the emulator): %.1f documents read on average (at most %d), %.1f RPCs, %d one after another at the median, %d at most (a query a term, the vector query, the user's list of deleted and archived sessions and, once in 10 minutes for a user, the count of their units, at once). On the emulator, with the user's %d units, a search takes %.0f ms at the median, %.0f ms at p95 (the emulator goes through the whole database for every query).\n\n",
		c.Searches, c.ReadsMean, c.ReadsMax, c.RPCsMean, c.SequentialP50, c.SequentialMax, c.Units, c.P50Ms, c.P95Ms)
}
