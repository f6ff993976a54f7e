package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
)

// FusionTrial is a fusion tried on the dev part of the conversation
// fixture: its quality, and its margin: the least, over recall@5 overall
// and by kind, of the fused figure minus its better leg's.
type FusionTrial struct {
	Fusion  recall.Fusion  `json:"fusion"`
	Quality *SearchQuality `json:"quality"`
	Margin  float64        `json:"margin"`
}

// CalibrateFusion tries every fusion of the grid on the dev part and
// returns the trials, the chosen first: the largest margin over the
// better leg, then the best recall@5, then the best MRR (the grid's order
// breaks what is left): on n of its conversations, or, with 0, all.
func CalibrateFusion(ctx context.Context, e recall.Embedder, tok history.Counter, n int) ([]FusionTrial, error) {
	return tryFusions(ctx, e, tok, "dev", devConv, cmp.Or(n, devConversations), devSeed)
}

// HeldOutReach tries the grid on the held-out part, as CalibrateFusion
// does on dev, and returns its best trial and the trial of f: whether any
// fusion of the grid reaches its better leg there (what the legs allow),
// never used to choose one.
func HeldOutReach(ctx context.Context, e recall.Embedder, tok history.Counter, n int, f recall.Fusion) ([2]FusionTrial, error) {
	trials, err := tryFusions(ctx, e, tok, "held-out", heldOutConv, cmp.Or(n, convConversations), heldOutSeed)
	if err != nil {
		return [2]FusionTrial{}, err
	}
	i := slices.IndexFunc(trials, func(t FusionTrial) bool { return t.Fusion == f })
	if i < 0 {
		return [2]FusionTrial{}, fmt.Errorf("fusion %+v is not in the grid", f)
	}
	return [2]FusionTrial{trials[0], trials[i]}, nil
}

// tryFusions tries every fusion of the grid on the part of n
// conversations built from t, best first.
func tryFusions(ctx context.Context, e recall.Embedder, tok history.Counter, part string, t convTemplates, n int, seed uint64) ([]FusionTrial, error) {
	convs, qs := buildConversations(t, n, seed)
	p, err := storeConvPart(ctx, e, tok, part, convs, qs)
	if err != nil {
		return nil, err
	}
	words, err := p.score(methodWords, p.search(ctx, recall.WordsOnly, recall.Fusion{}))
	if err != nil {
		return nil, err
	}
	meaning, err := p.score(methodMeaning, p.search(ctx, recall.MeaningOnly, recall.Fusion{}))
	if err != nil {
		return nil, err
	}
	legs, err := p.rankLegs(ctx)
	if err != nil {
		return nil, err
	}
	var trials []FusionTrial
	for _, f := range fusionGrid() {
		q, err := p.score(methodFused, func(c int, q string) ([]string, error) {
			ids := f.Order(legs[[2]string{p.convs[c].user, q}])
			return ids[:min(len(ids), 10)], nil
		})
		if err != nil {
			return nil, err
		}
		trials = append(trials, FusionTrial{Fusion: f, Quality: q, Margin: margin(q, words, meaning)})
	}
	slices.SortStableFunc(trials, func(a, b FusionTrial) int {
		return cmp.Or(cmp.Compare(b.Margin, a.Margin), cmp.Compare(b.Quality.At5, a.Quality.At5), cmp.Compare(b.Quality.MRR, a.Quality.MRR))
	})
	return trials, nil
}

// rankLegs runs each question's two legs once, as a search of 10
// results does, to fuse them every way the grid tries.
func (p *convPart) rankLegs(ctx context.Context) (map[[2]string]recall.Ranked, error) {
	s := &recall.Service{Embedder: p.e, Store: p.db}
	out := map[[2]string]recall.Ranked{}
	for _, q := range p.qs {
		user := p.convs[q.conv].user
		r, err := s.RankLegs(ctx, user, q.query, 10)
		if err != nil {
			return nil, err
		}
		out[[2]string{user, q.query}] = r
	}
	return out, nil
}

// margin is the least of fused's recall@5 minus its better leg's, overall
// and for each kind.
func margin(fused, words, meaning *SearchQuality) float64 {
	m := fused.At5 - max(words.At5, meaning.At5)
	for _, k := range convKinds {
		m = min(m, fused.ByKind[k]-max(words.ByKind[k], meaning.ByKind[k]))
	}
	return m
}

// shownTrials is how many of the grid's trials bench.md and bench.json
// show, best first.
const shownTrials = 20

// WriteReach prints what the grid reaches on the held-out part.
func WriteReach(w io.Writer, reach *[2]FusionTrial) {
	if reach == nil {
		return
	}
	best, used := reach[0], reach[1]
	fmt.Fprintf(w, "The same grid on the held-out part, to see what the legs allow there (never used to choose): its best fusion (%+v) is %+.3f from the better leg at recall@5 (least of overall and by kind), recall@5 %.3f; the one search uses, %+.3f, recall@5 %.3f.\n\n",
		best.Fusion, best.Margin, best.Quality.At5, used.Margin, used.Quality.At5)
}

// WriteCalibration prints the trials, best first.
func WriteCalibration(w io.Writer, trials []FusionTrial) {
	if len(trials) == 0 {
		return
	}
	fmt.Fprintln(w, "Fusions tried on the dev part of the conversation fixture (only there), best first: margin over the better leg (least of recall@5 overall and by kind), recall@5, MRR:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| K | words weight | keep | confident at | without the most common term | unless meaning is sure by | margin | recall@5 | MRR | single | temporal | multi-hop | paraphrase |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, t := range trials[:min(len(trials), shownTrials)] {
		f, q := t.Fusion, t.Quality
		fmt.Fprintf(w, "| %g | %g | %d | %g | %v | %g | %+.3f | %.3f | %.3f | %.2f | %.2f | %.2f | %.2f |\n", f.K, f.Words, f.Keep, f.Confident, f.Spread, f.Sure, t.Margin, q.At5, q.MRR,
			q.ByKind[kindSingle], q.ByKind[kindTemporal], q.ByKind[kindMultiHop], q.ByKind[kindParaphrase])
	}
	fmt.Fprintln(w)
}

// fusionGrid is every fusion tried, the simpler first (the grid's order
// breaks ties): reciprocal rank's constant, the words leg's weight (the
// meaning leg's is 1), how many of each leg's first units are kept among
// the first places, and the gate: the words leg's confidence (from the
// weight of all the query's terms, or of all but its most common) and
// whether the meaning leg being sure (its first this much more similar
// than its fifth) keeps its weight.
func fusionGrid() []recall.Fusion {
	var out []recall.Fusion
	for _, keep := range []int{0, 1, 2} {
		for _, k := range []float64{10, 30, 60} {
			for _, w := range []float64{1, 2, 4} {
				out = append(out, recall.Fusion{K: k, Words: w, Meaning: 1, Keep: keep})
				for _, conf := range []float64{0.6, 1} {
					for _, spread := range []bool{false, true} {
						for _, sure := range []float64{0, 0.05, 0.1, 0.2} {
							out = append(out, recall.Fusion{K: k, Words: w, Meaning: 1, Confident: conf, Spread: spread, Sure: sure, Keep: keep})
						}
					}
				}
			}
		}
	}
	return out
}
