// Command bench measures the cost and latency of turns as a conversation
// grows, for this backend and a baseline, against the Firestore emulator
// (FIRESTORE_EMULATOR_HOST), with the model served at once in-process.
// `make bench` runs it under the emulators.
//
//	bench [-tiny] [-out bench-out]
//	bench -retention [-tiny] [-due N] [-sweep path] [-out bench-out]
//	bench -search [-tiny] [-users N -units N]
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/bench"
	"github.com/chatmemory/backend/llm/llmtest"
)

func main() {
	tiny := flag.Bool("tiny", false, "a few turns, to check the harness")
	ret := flag.Bool("retention", false, "benchmark the retention sweep instead of turns")
	due := flag.Int("due", 0, "with -retention: one run with this many due sessions (default: 2000, 4000, then 8000)")
	sweep := flag.String("sweep", "", "with -retention: the sweep command to time (default: cmd/sweep, built now)")
	out := flag.String("out", "bench-out", "where to write bench.json, bench.md and bench.png")
	bill := flag.Bool("bill", false, "benchmark the model bill (the prompt cache's share, per strategy) instead of turns")
	search := flag.Bool("search", false, "only a search's latency and reads on the emulator, with users seeded through the API (make bench's size: 10 users' 3,000 exchanges)")
	users := flag.Int("users", 0, "with -search: this many users (default: make bench's, or -tiny's)")
	units := flag.Int("units", 0, "with -search: about this many exchanges each (default: make bench's, or -tiny's)")
	flag.Parse()
	if *bill {
		os.Exit(modelBill(*tiny, *out))
	}
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		fmt.Fprintln(os.Stderr, "bench: FIRESTORE_EMULATOR_HOST is not set; run `make bench`")
		os.Exit(2)
	}
	if *ret {
		os.Exit(retention(*tiny, *due, *sweep, *out))
	}
	cfg := bench.Full()
	if *tiny {
		cfg = bench.Tiny()
	}
	if *search {
		os.Exit(searchScale(cmp.Or(*users, cfg.SearchUsers), cmp.Or(*units, cfg.SearchUnits)))
	}
	cfg.EmbeddingCalls = llmtest.EmbeddingCalls
	var err error
	if cfg.Embedders, err = bench.QualityEmbedders(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	llmtest.SetEmbeddingDelay(bench.EmbeddingLatency)
	model := llmtest.Start()
	defer model.Close()
	model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		model.Forget()
		return llmtest.Response{Content: bench.Reply(r), ChunkDelay: bench.ChunkDelay(r)}
	})
	rep, err := bench.Run(context.Background(), cfg, model.BaseURL(), func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := rep.Write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	rep.WriteTable(os.Stdout)
	fmt.Fprintf(os.Stderr, "bench: wrote %s/bench.json, bench.md and bench.png\n", *out)
}

// retention runs the retention benchmark at each size (one, with -due)
// and writes retention.json and retention.md to out.
func retention(tiny bool, due int, sweep, out string) int {
	var cfgs []bench.RetentionConfig
	switch {
	case tiny:
		cfgs = []bench.RetentionConfig{bench.RetentionTiny()}
	case due > 0:
		cfgs = []bench.RetentionConfig{bench.RetentionFull(due)}
	default:
		for _, n := range bench.RetentionSizes {
			cfgs = append(cfgs, bench.RetentionFull(n))
		}
	}
	if sweep == "" {
		dir, err := os.MkdirTemp("", "bench-sweep")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		sweep = filepath.Join(dir, "sweep")
		if err := buildSweep(sweep); err != nil {
			fmt.Fprintln(os.Stderr, "bench: building cmd/sweep:", err)
			return 1
		}
	}
	var runs []*bench.RetentionReport
	for _, cfg := range cfgs {
		cfg.Command = sweep
		rep, err := bench.RunRetention(context.Background(), cfg, func(f string, a ...any) {
			fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...)
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		runs = append(runs, rep)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	data, _ := json.MarshalIndent(runs, "", "  ")
	var table strings.Builder
	bench.WriteRetentionTables(&table, runs)
	for name, body := range map[string][]byte{"retention.json": data, "retention.md": []byte(table.String())} {
		if err := os.WriteFile(filepath.Join(out, name), body, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	fmt.Print(table.String())
	for _, r := range runs {
		if !r.Verified {
			return 1
		}
	}
	return 0
}

// buildSweep builds cmd/sweep to path, as it is deployed (the bench times
// the process, not `go run`'s compilation).
func buildSweep(path string) error {
	cmd := exec.Command("go", "build", "-o", path, "./cmd/sweep")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// modelBill runs the model bill's conversations (a few turns with -tiny)
// and writes bill.json and bill.md to out.
func modelBill(tiny bool, out string) int {
	turns := bench.BillTurns
	if tiny {
		turns = 12
	}
	rows, err := bench.RunBill(context.Background(), turns)
	if err == nil {
		err = bench.WriteBillFiles(out, rows)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	bench.WriteBill(os.Stdout, rows)
	return 0
}

// searchScale measures a search at scale alone (what `make bench` measures
// among the rest) and prints it.
func searchScale(users, units int) int {
	s, err := bench.MeasureSearchScale(context.Background(), users, units, 100, func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	bench.WriteSearchScale(os.Stdout, s)
	return 0
}
