package bench_test

import (
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/bench"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/recall"
)

// TestTinyRun proves the harness works and its output parses. It asserts
// counts, never times: benchmarks are not timed tests.
func TestTinyRun(t *testing.T) {
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	model := llmtest.New(t)
	model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		return llmtest.Response{Content: bench.Reply(r), ChunkDelay: bench.ChunkDelay(r)}
	})
	tiny := bench.Tiny()
	tiny.EmbeddingCalls = llmtest.EmbeddingCalls
	tiny.Embedders = []recall.Embedder{llm.Lexical{}}
	rep, err := bench.Run(context.Background(), tiny, model.BaseURL(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Project, Baseline struct {
			Bands   []bench.Band
			Samples []bench.Sample
		}
		Throughput []bench.Throughput
		Ratios     []bench.Ratio
		Tokenizer  struct {
			MessagesPerSecond         float64
			ContextBuildTokenizations int64
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("bench.json does not parse: %v", err)
	}
	cfg := bench.Tiny()
	if len(got.Project.Samples) != cfg.Turns || len(got.Baseline.Samples) != cfg.Turns ||
		len(got.Project.Bands) != len(cfg.Bands) || len(got.Ratios) != len(cfg.Bands) || len(got.Throughput) != len(cfg.Concurrency) {
		t.Fatalf("report shape: %+v", got)
	}
	for _, s := range got.Project.Samples {
		if s.Reads == 0 || s.Writes == 0 || s.RoundTrips == 0 || s.Bytes == 0 || s.TTFTMs <= 0 {
			t.Errorf("turn %d counted nothing: %+v", s.Turn, s)
		}
		// The turn's own claim: one batched read and one commit before the model.
		if s.BeforeModel != 2 {
			t.Errorf("turn %d: %d round trips before the model, want 2", s.Turn, s.BeforeModel)
		}
	}
	if rep.Amortized.Turns != cfg.Turns || rep.Amortized.Median < 3 || rep.Amortized.Mean < 3 ||
		rep.LargestDocBytes <= 0 || rep.LargestDocBytes > 1<<20*9/10 {
		t.Errorf("amortized %+v, largest document %d bytes", rep.Amortized, rep.LargestDocBytes)
	}
	if h := rep.Hotspot; h.Turns != cfg.HotspotTurns || h.OneUserRoundTrips == 0 || h.ManyUsersRoundTrips == 0 {
		t.Errorf("hotspot: %+v", h)
	}
	// The baseline reads the whole history: turn N reads the 2(N-1) stored messages.
	for _, s := range got.Baseline.Samples {
		if want := int64(2 * (s.Turn - 1)); s.Reads != max(want, 1) {
			t.Errorf("baseline turn %d read %d documents, want %d", s.Turn, s.Reads, max(want, 1))
		}
	}
	if got.Tokenizer.ContextBuildTokenizations != 0 || got.Tokenizer.MessagesPerSecond <= 0 {
		t.Errorf("tokenizer: %+v", got.Tokenizer)
	}
	f, err := os.Open(filepath.Join(dir, "bench.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 500 {
		t.Fatalf("bench.png: %v", err)
	}
	// The memory path: the context and the append, in 1 + 1 round trips
	// (1 + 2 for the user's first append on the instance, which reads
	// their window and spend); the one document loads and saves in 1 + 3.
	if mp := rep.MemoryPath; mp == nil || len(mp.Project) != len(cfg.Bands) || len(mp.OneDocument) != len(cfg.Bands) {
		t.Fatalf("memory path: %+v", mp)
	} else {
		for i := range mp.Project {
			p, o := mp.Project[i], mp.OneDocument[i]
			if rt := p.RoundTrips; rt < 2 || rt > 2.5 || (i > 0 && rt != 2) || o.RoundTrips != 4 || o.Reads != 2 || o.Writes != 1 || p.P50Ms <= 0 {
				t.Errorf("memory path band %d: this backend %+v, one document %+v", i, p, o)
			}
		}
	}
	// Recall: an embedding per turn once exchanges are embedded (and one
	// more with recall on), one more write (the exchange); before the
	// model, the claim's own 2 RPCs, and beside them the recall's vector
	// query, the count of the user's units and, for each of the message's
	// terms (at most recall.MaxQueryTerms), its query and its count: a
	// search's retrieval, all in the same round trip (from all sessions
	// too: the hits' sessions are read only on the first turn, before the
	// instance knows the session recalls from all).
	const maxRecallRPCs = 2 + 2 + 2*recall.MaxQueryTerms
	if r := rep.Recall; r == nil || len(r.Sides) != 4 {
		t.Fatalf("recall run: %+v", r)
	} else {
		none, indexed, session, all := r.Sides[0], r.Sides[1], r.Sides[2], r.Sides[3]
		// (Learning embeds its candidate facts once per extraction, every
		// 3 turns.)
		if none.EmbeddingCalls != 0 || indexed.EmbeddingCalls < 1 || indexed.EmbeddingCalls > 1.5 ||
			math.Abs(session.EmbeddingCalls-indexed.EmbeddingCalls-1) > 1e-9 || math.Abs(all.EmbeddingCalls-session.EmbeddingCalls) > 1e-9 ||
			indexed.Writes < none.Writes+1 || none.BeforeModel != 2 || indexed.BeforeModel != 2 ||
			session.BeforeModel < 4 || session.BeforeModel > maxRecallRPCs || all.BeforeModel < 4 || all.BeforeModel > maxRecallRPCs+0.1 {
			t.Errorf("recall sides: %+v", r.Sides)
		}
	}
	// Pruning: the same turns send the model less, and summarize no more
	// often, with tool outputs pruned.
	if p := rep.Pruning; p == nil || len(p.Sides) != 2 || p.Sides[0].TokensPerTurn >= p.Sides[1].TokensPerTurn || p.Sides[0].Summaries > p.Sides[1].Summaries {
		t.Errorf("pruning run: %+v", rep.Pruning)
	}
	// Upkeep: the trim deletes the older half, a message a delete; the first
	// roll-up writes month notes with the model, a second at once writes
	// nothing but the run's mark; the history reaches the memory block.
	if u := rep.Upkeep; u == nil || len(u.RollUps) != 4 {
		t.Errorf("upkeep: %+v", rep.Upkeep)
	} else {
		if tr := u.Trim; tr.Items < cfg.UpkeepExchanges-4 || tr.Items > cfg.UpkeepExchanges+4 || tr.Deletes != int64(tr.Items) {
			t.Errorf("trim: %+v", tr)
		}
		if first, again := u.RollUps[0], u.RollUps[2]; first.ModelCalls == 0 || first.Writes < 2 || again.Writes != 1 || again.ModelCalls != 0 || u.BlockTokens == 0 {
			t.Errorf("roll-ups: %+v; block %d tokens", u.RollUps, u.BlockTokens)
		}
	}
	// Search: both parts of the conversation fixture, each method; the
	// fusion's whole grid tried, on held-out too (what it reaches there).
	if len(rep.Conversations) != 3*5 || len(rep.Calibration) < 400 || rep.SearchScale == nil || rep.HeldOutReach == nil || rep.HeldOutReach[1].Fusion != recall.DefaultFusion {
		t.Errorf("search: %d conversation measures, %d fusions tried, scale %+v, held-out reach %+v", len(rep.Conversations), len(rep.Calibration), rep.SearchScale, rep.HeldOutReach)
	}
	if len(rep.Quality) != 1 || rep.Quality[0].SearchRecallAt5 < 0.8 {
		t.Errorf("recall quality: %+v", rep.Quality)
	}
	// A streamed reply starts and deletes its draft and saves it at least
	// once at the shortest interval.
	if len(rep.Drafts) != len(bench.DraftIntervals) {
		t.Fatalf("drafts: %+v", rep.Drafts)
	}
	for _, d := range rep.Drafts {
		if d.ExtraWrites < 1 || d.ExtraDeletes != 1 || (d.IntervalMs == 500 && d.ExtraWrites < 2) {
			t.Errorf("draft run %+v", d)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "bench.md"))
	if !strings.Contains(string(md), "| 9–12 | baseline |") || !strings.Contains(string(md), "$ per 1,000 turns") || !strings.Contains(string(md), "2000 ms (default)") ||
		!strings.Contains(string(md), "| lexical-stand-in/256 | 0.9") {
		t.Errorf("bench.md:\n%s", md)
	}
}

// TestTinyRetention proves the retention benchmark's harness: the sweep of
// a tiny seed completes and the end state verifies. It asserts counts,
// never times.
// TestCostOf: list prices and the free tier, worked by hand.
func TestCostOf(t *testing.T) {
	for _, tc := range []struct {
		r, w, d float64
		dollars float64
		free    int
	}{
		{9.1, 2, 0, 0.00906, 5494}, // reads decide the free tier
		{5, 6, 1, 0.014, 3333},     // writes do
		{1, 1, 4, 0.0032, 5000},    // deletes do
		{0, 0, 0, 0, 0},            // nothing: no bound
		{1000, 0, 0, 0.6, 50},      // the baseline at turn 500
	} {
		c := bench.CostOf(tc.r, tc.w, tc.d)
		if math.Abs(c.DollarsPer1000-tc.dollars) > 1e-9 || c.FreeTurnsPerDay != tc.free {
			t.Errorf("CostOf(%v, %v, %v) = $%v, %d a day; want $%v, %d", tc.r, tc.w, tc.d, c.DollarsPer1000, c.FreeTurnsPerDay, tc.dollars, tc.free)
		}
	}
}

func TestTinyRetention(t *testing.T) {
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	cfg := bench.RetentionTiny()
	cfg.Command = filepath.Join(t.TempDir(), "sweep")
	if out, err := exec.Command("go", "build", "-o", cfg.Command, "../cmd/sweep").CombinedOutput(); err != nil {
		t.Fatalf("building cmd/sweep: %v: %s", err, out)
	}
	rep, err := bench.RunRetention(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Sweep
	purged := cfg.Due / 2
	if !rep.Verified || !s.Complete || s.SoftDeleted != cfg.Due-purged || s.Purged != purged ||
		s.DocumentsDeleted != purged*(3+cfg.Messages) || s.Backlog == nil || s.Backlog.Total() != 0 { // units of search, deleted unseen, uncounted
		t.Errorf("retention run: %+v, sweep %+v, problems %v", rep, s, rep.Problems)
	}
	// The process's report accounts for its whole run: every phase, adding
	// up to a total (and the time phases ran at once) the process's wall
	// time exceeds only by starting and exiting.
	var names []string
	var sum int64
	for _, p := range s.Phases {
		names = append(names, p.Name)
		sum += p.Ms
	}
	want := []string{"open", "dueJobs", "resumePurges", "purge", "softDelete", "trim", "backlog", "backstop", "rollUp", "attachments"}
	wall := time.Duration(rep.WallSeconds * float64(time.Second))
	total := time.Duration(s.DurationMs) * time.Millisecond
	if d := sum - s.OverlapMs - s.DurationMs; !slices.Equal(names, want) || d > 1 || d < -int64(len(want)) || total > wall || wall-total > 500*time.Millisecond {
		t.Errorf("phases %v adding up to %d ms (overlapping %d ms) of %v, the process ran %v; want %v, adding up to the total and the overlap, within 500 ms of the process", names, sum, s.OverlapMs, total, wall, want)
	}
	var table strings.Builder
	bench.WriteRetentionTables(&table, []*bench.RetentionReport{rep})
	if !strings.Contains(table.String(), "raw BulkWriter deletes") || !strings.Contains(table.String(), "| 36 | 3 | 18 | 18 |") || !strings.Contains(table.String(), "| rollUp |") {
		t.Errorf("table: %s", table.String())
	}
}
