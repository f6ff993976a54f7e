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
// breaks what is left).
func CalibrateFusion(ctx context.Context, e recall.Embedder, tok history.Counter) ([]FusionTrial, error) {
	convs, qs := buildConversations(devConv, convConversations, devSeed)
	p, err := storeConvPart(ctx, e, tok, "dev", convs, qs)
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
	var trials []FusionTrial
	for _, f := range fusionGrid() {
		q, err := p.score(methodFused, p.search(ctx, recall.BothLegs, f))
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

// margin is the least of fused's recall@5 minus its better leg's, overall
// and for each kind.
func margin(fused, words, meaning *SearchQuality) float64 {
	m := fused.At5 - max(words.At5, meaning.At5)
	for _, k := range convKinds {
		m = min(m, fused.ByKind[k]-max(words.ByKind[k], meaning.ByKind[k]))
	}
	return m
}

// WriteCalibration prints the trials, best first.
func WriteCalibration(w io.Writer, trials []FusionTrial) {
	if len(trials) == 0 {
		return
	}
	fmt.Fprintln(w, "Fusions tried on the dev part of the conversation fixture (only there), best first: margin over the better leg (least of recall@5 overall and by kind), recall@5, MRR:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| K | words weight | confident at | meaning weight then | margin | recall@5 | MRR | single | temporal | multi-hop | paraphrase |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, t := range trials {
		f, q := t.Fusion, t.Quality
		fmt.Fprintf(w, "| %g | %g | %g | %g | %+.3f | %.3f | %.3f | %.2f | %.2f | %.2f | %.2f |\n", f.K, f.Words, f.Confident, f.Damped, t.Margin, q.At5, q.MRR,
			q.ByKind[kindSingle], q.ByKind[kindTemporal], q.ByKind[kindMultiHop], q.ByKind[kindParaphrase])
	}
	fmt.Fprintln(w)
}

// fusionGrid is every fusion tried: reciprocal rank's constant, the words
// leg's weight (the meaning leg's is 1), and the gate (confidence of the
// words leg, and the meaning leg's weight when it is confident).
func fusionGrid() []recall.Fusion {
	var out []recall.Fusion
	for _, k := range []float64{10, 30, 60} {
		for _, w := range []float64{1, 2, 4} {
			for _, conf := range []float64{0, 0.6, 1} {
				out = append(out, recall.Fusion{K: k, Words: w, Meaning: 1, Confident: conf})
			}
		}
	}
	return out
}
