package bench

import (
	"fmt"
	"io"
	"math"
)

// Firestore's list prices (multi-region, per 100,000 documents) and its
// free tier (documents a day), as the report states them.
const (
	PricePer100kReads   = 0.06
	PricePer100kWrites  = 0.18
	PricePer100kDeletes = 0.02
	FreeReadsPerDay     = 50_000
	FreeWritesPerDay    = 20_000
	FreeDeletesPerDay   = 20_000
)

// Cost is what a turn costs in documents and in money.
type Cost struct {
	Reads   float64 `json:"readsPerTurn"`
	Writes  float64 `json:"writesPerTurn"`
	Deletes float64 `json:"deletesPerTurn"`
	// DollarsPer1000 is 1,000 such turns at list prices.
	DollarsPer1000 float64 `json:"dollarsPer1000Turns"`
	// FreeTurnsPerDay is how many such turns a day the free tier holds.
	FreeTurnsPerDay int `json:"freeTurnsPerDay"`
}

// writeCosts writes the money table and the draft intervals' table.
func (r *Report) writeCosts(w io.Writer) {
	fmt.Fprintf(w, "Firestore list prices (multi-region): $%.2f per 100k reads, $%.2f per 100k writes, $%.2f per 100k deletes; free tier %d reads, %d writes, %d deletes a day.\n\n",
		PricePer100kReads, PricePer100kWrites, PricePer100kDeletes, FreeReadsPerDay, FreeWritesPerDay, FreeDeletesPerDay)
	fmt.Fprintln(w, "| turns | design | reads/turn | writes/turn | deletes/turn | $ per 1,000 turns | turns a day in the free tier |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	row := func(turns, design string, c Cost) {
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f | %.4f | %d |\n", turns, design, c.Reads, c.Writes, c.Deletes, c.DollarsPer1000, c.FreeTurnsPerDay)
	}
	r.eachBand(func(b Band, baseline bool) {
		name := "this backend, streamed"
		if baseline {
			name = "baseline"
		}
		row(fmt.Sprintf("%d–%d", b.From, b.To), name, CostOf(b.Reads, b.Writes, b.Deletes))
	})
	a := r.Amortized
	if a.Turns > 0 {
		row(fmt.Sprintf("1–%d, defaults", a.Turns), "this backend, not streamed", CostOf(a.Reads, a.Writes, a.Deletes))
		if d := r.streamedDefault(); d != nil {
			row(fmt.Sprintf("1–%d, defaults", a.Turns), fmt.Sprintf("this backend, each reply streamed for %.0f s", d.ReplySecs),
				CostOf(a.Reads+float64(d.ExtraReads), a.Writes+float64(d.ExtraWrites), a.Deletes+float64(d.ExtraDeletes)))
		}
	}
	fmt.Fprintln(w)
	if len(r.Drafts) == 0 {
		return
	}
	fmt.Fprintf(w, "| draft interval | a reply streamed for %.0f s costs, over the same turn not streamed: reads | writes | deletes | a page loaded mid-reply starts behind the stream by, mean / max ms |\n", r.Drafts[0].ReplySecs)
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, d := range r.Drafts {
		name := fmt.Sprintf("%d ms", d.IntervalMs)
		if d.Default {
			name += " (default)"
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.0f / %.0f |\n", name, d.ExtraReads, d.ExtraWrites, d.ExtraDeletes, d.CatchUpMeanMs, d.CatchUpMaxMs)
	}
	fmt.Fprintln(w)
}

// CostOf prices a turn of r reads, w writes and d deletes.
func CostOf(r, w, d float64) Cost {
	c := Cost{Reads: r, Writes: w, Deletes: d,
		DollarsPer1000: 1000 * (r*PricePer100kReads + w*PricePer100kWrites + d*PricePer100kDeletes) / 100_000}
	free := math.Inf(1)
	for _, x := range [][2]float64{{r, FreeReadsPerDay}, {w, FreeWritesPerDay}, {d, FreeDeletesPerDay}} {
		if x[0] > 0 {
			free = math.Min(free, x[1]/x[0])
		}
	}
	if !math.IsInf(free, 1) {
		c.FreeTurnsPerDay = int(free)
	}
	return c
}

// streamedDefault is the draft run at the default interval, if measured.
func (r *Report) streamedDefault() *DraftRun {
	for i := range r.Drafts {
		if r.Drafts[i].Default {
			return &r.Drafts[i]
		}
	}
	return nil
}
