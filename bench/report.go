package bench

import (
	"fmt"
	"io"
)

// Ratio compares the baseline with the project over one band.
type Ratio struct {
	Band  string  `json:"band"`
	Reads float64 `json:"readsBaselineOverProject"`
	P50   float64 `json:"p50BaselineOverProject"`
}

// WriteTable writes the report as Markdown tables.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s. Started %s.\n\n", r.Machine, r.Started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintln(w, "| turns | design | round trips before the model (p50 / max) | round trips/turn, all included | reads/turn | writes/turn | KiB written/turn | p50 ms | p95 ms | first token p50 ms | tokenizations/turn |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	r.eachBand(func(b Band, baseline bool) {
		name := "this backend"
		if baseline {
			name = "baseline"
		}
		fmt.Fprintf(w, "| %d–%d | %s | %.0f / %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
			b.From, b.To, name, b.BeforeP50, b.BeforeMax, b.RoundTrips, b.Reads, b.Writes, b.Bytes/1024, b.P50Ms, b.P95Ms, b.TTFTP50, b.Tokenizations)
	})
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| turns | reads: baseline ÷ this backend | p50 latency: baseline ÷ this backend |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, x := range r.Ratios() {
		fmt.Fprintf(w, "| %s | %.1f× | %.1f× |\n", x.Band, x.Reads, x.P50)
	}
	fmt.Fprintln(w)
	r.writeCosts(w)
	r.writeMemoryPath(w)
	r.writeRecall(w)
	r.writePruning(w)
	r.writeUploads(w)
	r.writeUpkeep(w)
	fmt.Fprintln(w, "| sessions at once | turns | turns/s | p95 ms |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range r.Throughput {
		fmt.Fprintf(w, "| %d | %d | %.1f | %.1f |\n", t.Sessions, t.Turns, t.TurnsPerSecond, t.P95Ms)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "A conversation of %d turns with default settings, everything included (title, learning, summaries when due): median %.0f round trips a turn, mean %.2f. Largest document written: %d bytes (%.0f%% of Firestore's 1 MiB).\n\n",
		r.Amortized.Turns, r.Amortized.Median, r.Amortized.Mean, r.LargestDocBytes, 100*float64(r.LargestDocBytes)/(1<<20))
	h := r.Hotspot
	fmt.Fprintf(w, "| %d turns at once, in %d sessions | wall ms | round trips |\n|---|---|---|\n| of %d users | %.0f | %d |\n| of one user | %.0f | %d |\n\n",
		h.Turns, h.Turns, h.Turns, h.ManyUsersMs, h.ManyUsersRoundTrips, h.OneUserMs, h.OneUserRoundTrips)
	fmt.Fprintf(w, "Tokenizer: %.0f messages/s counted at write time; tokenizer calls while building contexts from stored history: %d.\n\n",
		r.Tokenizer.MessagesPerSecond, r.Tokenizer.ContextBuildTokenizations)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "- "+n)
	}
}

// Ratios compares the two sides band by band.
func (r *Report) Ratios() []Ratio {
	var out []Ratio
	for i, p := range r.Project.Bands {
		if i >= len(r.Baseline.Bands) {
			break
		}
		b := r.Baseline.Bands[i]
		out = append(out, Ratio{Band: fmt.Sprintf("%d–%d", p.From, p.To), Reads: div(b.Reads, p.Reads), P50: div(b.P50Ms, p.P50Ms)})
	}
	return out
}

// eachBand calls fn with each band of this backend, then the baseline's
// band of the same turns.
func (r *Report) eachBand(fn func(b Band, baseline bool)) {
	for i := range r.Project.Bands {
		fn(r.Project.Bands[i], false)
		if i < len(r.Baseline.Bands) {
			fn(r.Baseline.Bands[i], true)
		}
	}
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
