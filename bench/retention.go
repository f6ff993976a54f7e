package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	firestorepb "cloud.google.com/go/firestore/apiv1/firestorepb"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/retention"
)

// RetentionConfig sizes a retention run: Due sessions due, half of them
// deleted past their recovery window (to purge) and half idle or long
// archived (to soft-delete), beside as many fresh ones as are purged,
// which must stay; spread over Users users, each with Messages messages,
// seeded through the backend's HTTP API as users' apps would (embeddings
// on, as by default), then made due by moving only their expiry. The
// sweep runs as its own process (Command, the built cmd/sweep), as a
// scheduled run or an operator's does, and is timed from outside.
type RetentionConfig struct {
	Due      int
	Users    int
	Messages int
	RawDocs  int           // documents written and deleted for the raw BulkWriter rate
	Budget   time.Duration // the sweep's budget, as SWEEP_BUDGET_SECONDS
	Command  string        // the sweep command to run
}

// kinds are the sessions seeded of each kind: deleted ones to purge, idle
// and archived ones to soft-delete, fresh ones to keep.
func (c RetentionConfig) kinds() map[string]int {
	purge := c.Due / 2
	idle := (c.Due - purge) / 2
	return map[string]int{"deleted": purge, "idle": idle, "archived": c.Due - purge - idle, "fresh": purge}
}

// RetentionSizes are the due sessions of the runs of `make
// bench-retention`, one after the other on the same emulator: the run's
// time should grow with its work and no faster. 4,000 is the size the
// sweep's target was set at (2,000 to purge, 2,000 to soft-delete and
// 2,000 fresh ones beside them).
var RetentionSizes = []int{2000, 4000, 8000}

// RetentionFull is one run of `make bench-retention` with due sessions
// due.
func RetentionFull(due int) RetentionConfig {
	return RetentionConfig{Due: due, Users: 20, Messages: 10, RawDocs: 6000, Budget: 8 * time.Minute}
}

// RetentionTiny proves the harness works, in seconds.
func RetentionTiny() RetentionConfig {
	return RetentionConfig{Due: 36, Users: 3, Messages: 4, RawDocs: 100, Budget: time.Minute}
}

// FunctionSeconds is the longest a Cloud Function (2nd gen, event-driven)
// may run: what one scheduled sweep has.
const FunctionSeconds = 540

// RetentionReport is one retention run.
type RetentionReport struct {
	Config      RetentionConfig   `json:"config"`
	SeedSeconds float64           `json:"seedSeconds"`
	Sweep       *retention.Report `json:"sweep"`
	// WallSeconds is the sweep process's time from its start to its exit,
	// as an operator or the scheduler sees it; the report's own total is
	// Sweep.DurationMs.
	WallSeconds     float64  `json:"wallSeconds"`
	Sessions        float64  `json:"sessionsPerSecond"`         // soft-deleted and purged, over the process's wall time
	SoftDeletes     float64  `json:"softDeletesPerSecond"`      // over the time spent on them
	Purges          float64  `json:"purgesPerSecond"`           // over the time spent on them
	PurgeDocs       float64  `json:"purgeDocumentsPerSecond"`   // over the time spent on purges
	RawWrites       float64  `json:"rawBulkWriterWritesPerSec"` // the same emulator, the same run
	RawDeletes      float64  `json:"rawBulkWriterDeletesPerSec"`
	DailyCapacity   int      `json:"projectedExpirationsPerRun"` // one 540 s function at the whole-run rate
	Verified        bool     `json:"verified"`
	Problems        []string `json:"problems,omitempty"`
	UsableSeconds   float64  `json:"usableSecondsPerRun"`
	DocumentsPerRun int      `json:"documentsDeleted"`
}

// RunRetention seeds a fresh emulator project through the API, makes the
// due sessions due, sweeps once, verifies the end state by queries and
// measures a raw BulkWriter beside it.
func RunRetention(ctx context.Context, cfg RetentionConfig, log func(string, ...any)) (*RetentionReport, error) {
	project := fmt.Sprintf("demo-bench-retention-%d", time.Now().UnixNano())
	client, err := firestore.NewClient(ctx, project)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	tok, err := history.NewTikToken()
	if err != nil {
		return nil, err
	}
	fb, err := newFirebaseApp(ctx)
	if err != nil {
		return nil, err
	}
	authClient, err := fb.Auth(ctx)
	if err != nil {
		return nil, err
	}
	// As a server started with EMBEDDINGS on and no model service runs.
	fcfg := app.Config{ProjectID: authProject(), ChatModel: "gpt-4o-mini", MaxSessionMessages: 1 << 20, ContextStrategy: "summary_buffer",
		WindowExchanges: 10, ModelTimeout: time.Minute, SweepBudget: cfg.Budget, MaxBodyBytes: app.DefaultMaxBodyBytes,
		Embeddings: true, EmbeddingModel: llm.DefaultEmbeddingModel, EmbeddingDimensions: llm.DefaultEmbeddingDimensions}
	backend := app.New(fcfg, app.Deps{Store: app.Firestore(client), Auth: &functions.FirebaseVerifier{Client: authClient},
		Model: llm.Offline{}, Embedder: fcfg.Embedder(), Tokens: tok, Log: slog.New(slog.DiscardHandler)})
	backend.Chat.Runner = chat.Now{} // a seeded turn's job is done when its request returns
	const apps = 32
	api, stop, err := serve(backend.Handler(), apps)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &RetentionReport{Config: cfg}

	start := time.Now()
	kinds := cfg.kinds()
	log("retention: seeding %v sessions over %d users with %d messages, through the API", kinds, cfg.Users, cfg.Messages)
	users, err := signUpUsers(ctx, cfg.Users)
	if err != nil {
		return nil, err
	}
	var due []string
	var mu sync.Mutex
	for _, kind := range []string{"idle", "archived", "deleted", "fresh"} {
		err := parallel(ctx, apps, apps, func(w int) error {
			for i := w; i < kinds[kind]; i += apps {
				id, err := api[w].seedSession(ctx, users[i%len(users)], kind, i, cfg.Messages)
				if err != nil {
					return err
				}
				if kind != "fresh" {
					mu.Lock()
					due = append(due, id)
					mu.Unlock()
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	stop() // the server's work is done: the sweep has the machine to itself
	if err := makeDue(ctx, client, due, time.Now()); err != nil {
		return nil, err
	}
	rep.SeedSeconds = time.Since(start).Seconds()

	log("retention: running %s (budget %s)", cfg.Command, cfg.Budget)
	r, wall, err := sweepProcess(ctx, cfg, project)
	if err != nil {
		return nil, err
	}
	rep.Sweep, rep.WallSeconds = r, wall.Seconds()
	rep.Sessions = float64(r.SoftDeleted+r.Purged) / rep.WallSeconds
	rep.SoftDeletes = float64(r.SoftDeleted) / (float64(r.SoftDeleteMs) / 1000)
	rep.Purges = float64(r.Purged) / (float64(r.PurgeMs) / 1000)
	rep.PurgeDocs = float64(r.DocumentsDeleted) / (float64(r.PurgeMs) / 1000)
	rep.DocumentsPerRun = r.DocumentsDeleted
	// One scheduled run: a 540 s function whose sweep stops at 90% of its
	// budget; with the default budget (480 s) that is 432 s of work.
	rep.UsableSeconds = 480 * 0.9
	rep.DailyCapacity = int(rep.Sessions * rep.UsableSeconds)

	log("retention: verifying the end state")
	rep.Problems = verifyRetention(ctx, client, cfg)
	rep.Verified = len(rep.Problems) == 0

	log("retention: measuring a raw BulkWriter on the same emulator")
	rep.RawWrites, rep.RawDeletes, err = rawBulkWriter(ctx, client, cfg.RawDocs)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// verifyRetention checks by queries that every due session is gone or
// soft-deleted as it should be, nothing else changed, and nothing is left
// behind.
func verifyRetention(ctx context.Context, client *firestore.Client, cfg RetentionConfig) []string {
	var problems []string
	count := func(q firestore.Query) int {
		res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
		if err != nil {
			problems = append(problems, err.Error())
			return -1
		}
		return countOf(res["n"])
	}
	sessionsCol := client.Collection(firestoredb.SessionsCollection)
	kinds := cfg.kinds()
	want := map[string][2]any{ // topic → status, count
		"idle":     {"deleted", kinds["idle"]},
		"archived": {"deleted", kinds["archived"]},
		"deleted":  {"", 0},
		"fresh":    {"active", kinds["fresh"]},
	}
	for topic, w := range want {
		all := count(sessionsCol.Where("metadata.topic", "==", topic))
		if all != w[1].(int) {
			problems = append(problems, fmt.Sprintf("%d %s sessions left, want %d", all, topic, w[1]))
		}
		if w[0] != "" {
			if n := count(sessionsCol.Where("metadata.topic", "==", topic).Where("status", "==", w[0])); n != w[1].(int) {
				problems = append(problems, fmt.Sprintf("%d %s sessions are %s, want %d", n, topic, w[0], w[1]))
			}
		}
	}
	if n := count(client.Collection(firestoredb.PurgesCollection).Query); n != 0 {
		problems = append(problems, fmt.Sprintf("%d purge markers left", n))
	}
	// Every message left belongs to a session that stays.
	kept := kinds["idle"] + kinds["archived"] + kinds["fresh"]
	if n, want := count(client.CollectionGroup(firestoredb.MessagesCollection).Query), kept*cfg.Messages; n != want {
		problems = append(problems, fmt.Sprintf("%d messages left, want %d", n, want))
	}
	if n, want := count(client.CollectionGroup(firestoredb.ContextCollection).Query), 2*kept; cfg.Messages > 0 && n != want { // a window and a recall marker each
		problems = append(problems, fmt.Sprintf("%d context documents left, want %d", n, want))
	}
	if n, want := count(client.CollectionGroup(firestoredb.RecallCollection).Query), kept*(cfg.Messages/2); n != want { // an exchange a pair
		problems = append(problems, fmt.Sprintf("%d embedded exchanges left, want %d", n, want))
	}
	return problems
}

// rawBulkWriter writes n small documents with one BulkWriter, then deletes
// them, and returns both rates in documents per second. Writes are queued
// from as many goroutines as a purge uses, so the rate is the most one
// BulkWriter does here, not what one goroutine can queue.
func rawBulkWriter(ctx context.Context, client *firestore.Client, n int) (float64, float64, error) {
	col := client.Collection("bench_raw")
	timed := func(op func(bw *firestore.BulkWriter, ref *firestore.DocumentRef) (*firestore.BulkWriterJob, error)) (float64, error) {
		start := time.Now()
		bw := client.BulkWriter(ctx)
		jobs := make([]*firestore.BulkWriterJob, n)
		err := parallel(ctx, n, 32, func(i int) error {
			job, err := op(bw, col.Doc(fmt.Sprintf("d%06d", i)))
			jobs[i] = job
			return err
		})
		if err != nil {
			return 0, err
		}
		bw.End()
		for _, j := range jobs {
			if _, err := j.Results(); err != nil {
				return 0, err
			}
		}
		return float64(n) / time.Since(start).Seconds(), nil
	}
	w, err := timed(func(bw *firestore.BulkWriter, ref *firestore.DocumentRef) (*firestore.BulkWriterJob, error) {
		return bw.Set(ref, map[string]any{"userId": "raw", "seq": 1, "content": "a sentence or two of ordinary conversation."})
	})
	if err != nil {
		return 0, 0, err
	}
	d, err := timed(func(bw *firestore.BulkWriter, ref *firestore.DocumentRef) (*firestore.BulkWriterJob, error) {
		return bw.Delete(ref)
	})
	return w, d, err
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// WriteRetentionTables prints the runs side by side (the sweep's time
// should grow as its due sessions do), then each run's rates.
func WriteRetentionTables(w io.Writer, runs []*RetentionReport) {
	fmt.Fprintf(w, "| due sessions | users | soft-deleted | purged | documents deleted | process wall time | report's total | due sessions per second (wall) | complete | verified |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		s := r.Sweep
		fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %.1f s | %.1f s | %.0f | %v | %v |\n", r.Config.Due, r.Config.Users, s.SoftDeleted, s.Purged,
			s.DocumentsDeleted, r.WallSeconds, float64(s.DurationMs)/1000, r.Sessions, s.Complete, r.Verified)
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		r.WriteRetentionTable(w)
	}
}

// WriteRetentionTable prints one run's rates.
func (r *RetentionReport) WriteRetentionTable(w io.Writer) {
	s := r.Sweep
	fmt.Fprintf(w, "**%d due sessions** (%d users, %d messages each, seeded through the API in %.0f s): %d soft-deleted, %d purged, %d documents deleted; the process ran %.1f s, its report says %.1f s.\n\n",
		r.Config.Due, r.Config.Users, r.Config.Messages, r.SeedSeconds, s.SoftDeleted, s.Purged, s.DocumentsDeleted, r.WallSeconds, float64(s.DurationMs)/1000)
	writePhases(w, s)
	fmt.Fprintf(w, "| rate | per second |\n|---|---|\n")
	fmt.Fprintf(w, "| sessions (soft-deleted + purged), the process's wall time | %.0f |\n", r.Sessions)
	fmt.Fprintf(w, "| soft-deletes | %.0f |\n", r.SoftDeletes)
	fmt.Fprintf(w, "| purges | %.0f |\n", r.Purges)
	fmt.Fprintf(w, "| documents deleted by purges | %.0f |\n", r.PurgeDocs)
	fmt.Fprintf(w, "| raw BulkWriter deletes, same emulator, same run | %.0f |\n", r.RawDeletes)
	fmt.Fprintf(w, "| raw BulkWriter writes, same emulator, same run | %.0f |\n\n", r.RawWrites)
	fmt.Fprintf(w, "Purges delete at %.0f%% of the raw BulkWriter delete rate. One scheduled run (%.0f s of work in a %d s function) handles about %d expirations at this run's rate.\n\n",
		100*r.PurgeDocs/r.RawDeletes, r.UsableSeconds, FunctionSeconds, r.DailyCapacity)
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM: %s\n\n", p)
	}
}

// countOf reads a count aggregation's value.
func countOf(v any) int {
	switch n := v.(type) {
	case *firestorepb.Value:
		return int(n.GetIntegerValue())
	case int64:
		return int(n)
	}
	return -1
}
