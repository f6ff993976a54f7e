package recall

import (
	"cmp"
	"slices"
)

// Fusion is how a retrieval fuses its two legs' rankings: by weighted
// reciprocal rank (a unit ranked r-th, from 1, by a leg adds the leg's
// weight / (K + r)), the meaning leg's weight lowered to Damped when the
// words leg is confident: its first unit holds at least Confident of the
// query's weight (the summed IDF of its terms). Ties go to the unit the
// words leg ranks higher, then to the one meaning ranks higher. Fusing
// ranks needs no calibration between BM25's scores and cosine
// similarities, which live on unrelated scales; the weights and the gate
// were chosen on the dev part of the conversation fixture (docs/search.md).
type Fusion struct {
	K              float64
	Words, Meaning float64
	Confident      float64 // 0: never confident
	Damped         float64
}

// DefaultFusion is the fusion calibrated on the dev part.
var DefaultFusion = Fusion{K: 10, Words: 1, Meaning: 1, Confident: 0.6}

// fusion is the service's fusion, DefaultFusion unless it sets one.
func (svc *Service) fusion() Fusion {
	if svc.Fusion == (Fusion{}) {
		return DefaultFusion
	}
	return svc.Fusion
}

// fuse ranks the units of both legs (each best first); coverage is the
// share of the query's weight the words leg's first unit holds.
func (f Fusion) fuse(words, meaning []Hit, coverage float64) []fused {
	wm := f.Meaning
	if f.Confident > 0 && coverage >= f.Confident {
		wm = f.Damped
	}
	byID := map[string]*fused{}
	var order []*fused
	add := func(hits []Hit, weight float64, leg func(*fused, int)) {
		for r, h := range hits {
			id := h.Unit.ID()
			x, ok := byID[id]
			if !ok {
				x = &fused{hit: h, wordsRank: len(words), meaningRank: len(meaning)}
				byID[id], order = x, append(order, x)
			}
			x.score += weight / (f.K + float64(r+1))
			leg(x, r)
		}
	}
	add(words, f.Words, func(x *fused, r int) { x.words, x.wordsRank = true, r })
	add(meaning, wm, func(x *fused, r int) { x.meaning, x.meaningRank = true, r })
	slices.SortStableFunc(order, func(a, b *fused) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.wordsRank, b.wordsRank), cmp.Compare(a.meaningRank, b.meaningRank))
	})
	out := make([]fused, len(order))
	for i, x := range order {
		out[i] = *x
	}
	return out
}

// coverage is the share of the weight of the query's terms (their IDF)
// that the first of the units words ranks holds; 0 if it found none.
func (c Corpus) coverage(terms []string, words []Hit) float64 {
	if len(words) == 0 {
		return 0
	}
	var all, held float64
	for _, t := range terms {
		w := c.idf(t)
		all += w
		if words[0].Unit.Bag.TF[t] > 0 {
			held += w
		}
	}
	if all == 0 {
		return 0
	}
	return held / all
}
