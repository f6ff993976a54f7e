package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/chatmemory/backend/retention"
)

// sweepProcess runs cfg.Command against project with the environment a
// server of the bench's configuration has (embeddings and long-term memory
// on, as by default) and returns its report and the wall time from
// starting the process to its exit: what an operator, or the scheduler's
// timeout, sees.
func sweepProcess(ctx context.Context, cfg RetentionConfig, project string) (*retention.Report, time.Duration, error) {
	cmd := exec.CommandContext(ctx, cfg.Command)
	cmd.Env = append(os.Environ(), "STORAGE_BACKEND=firestore", "GOOGLE_CLOUD_PROJECT="+project, "GCLOUD_PROJECT="+project,
		"SWEEP_BUDGET_SECONDS="+strconv.Itoa(int(cfg.Budget.Seconds())), "EMBEDDINGS=on", "LONG_TERM_MEMORY=on")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return nil, wall, fmt.Errorf("%s: %w: %s", cfg.Command, err, stderr.String())
	}
	var r retention.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, wall, fmt.Errorf("%s printed no report: %w: %s", cfg.Command, err, stdout.String())
	}
	return &r, wall, nil
}

// writePhases prints each phase of a run: when it began, its time, its
// share of the run, and what it did.
func writePhases(w io.Writer, s *retention.Report) {
	if len(s.Phases) == 0 {
		return
	}
	fmt.Fprintf(w, "| phase | from | time | share | round trips | counts |\n|---|---|---|---|---|---|\n")
	var sum int64
	for _, p := range s.Phases {
		sum += p.Ms
		share := 0.0
		if s.DurationMs > 0 {
			share = 100 * float64(p.Ms) / float64(s.DurationMs)
		}
		counts, _ := json.Marshal(p.Counts)
		fmt.Fprintf(w, "| %s | %d ms | %d ms | %.0f%% | %d | `%s` |\n", p.Name, p.StartMs, p.Ms, share, p.RPCs, counts)
	}
	perDue := 0.0
	if due := s.SoftDeleted + s.Purged + s.ResumedPurges; due > 0 {
		perDue = float64(s.RPCs) / float64(due)
	}
	fmt.Fprintf(w, "| total | 0 ms | %d ms (phases add up to %d ms, %d ms of them at once with others) | | %d (%.1f a due session) | |\n\n", s.DurationMs, sum, s.OverlapMs, s.RPCs, perDue)
}
