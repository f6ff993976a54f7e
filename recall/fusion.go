package recall

import (
	"cmp"
	"context"
	"slices"
)

// Fusion is how a retrieval fuses its two legs' rankings: by weighted
// reciprocal rank (a unit ranked r-th, from 1, by a leg adds the leg's
// weight / (K + r)), the meaning leg's weight lowered to Damped when the
// words leg is confident: its first unit holds at least Confident of the
// query's weight (the summed IDF of its terms; with Spread, leaving out
// the query's most common term). Sure, if set, keeps the meaning leg's
// weight when it is sure too: its first unit is at least Sure more
// similar to the query than its fifth. Keep, if set, puts each leg's
// first Keep units among the first 2 × Keep. Ties go to the unit the words
// leg ranks higher, then to the one meaning ranks higher. Fusing ranks
// needs no calibration between BM25's scores and cosine similarities,
// which live on unrelated scales; the weights and the gates were chosen on
// the dev part of the conversation fixture (docs/search.md).
type Fusion struct {
	K              float64
	Words, Meaning float64
	Confident      float64 // 0: never confident
	Damped         float64
	Spread         bool
	Sure           float64 // 0: the meaning leg is never sure
	Keep           int
}

// DefaultFusion is the fusion calibrated on the dev part: each leg's
// first two units among the first four, the rest by reciprocal rank (K
// 60, equal weights), the meaning leg's units after the words leg's when
// the words leg's first holds 0.6 of the query's weight.
var DefaultFusion = Fusion{K: 60, Words: 1, Meaning: 1, Confident: 0.6, Keep: 2}

// fusion is the service's fusion, DefaultFusion unless it sets one.
func (svc *Service) fusion() Fusion {
	if svc.Fusion == (Fusion{}) {
		return DefaultFusion
	}
	return svc.Fusion
}

// Ranked is what a retrieval's legs found, each best first, before they
// are fused: the units by words and by meaning, and the query's terms and
// the corpus BM25 weighed them against.
type Ranked struct {
	words, meaning []Hit
	terms          []string
	corpus         Corpus
	visibility     Visibility
}

// RankLegs runs a search's two legs for query over userID's units, as
// Search does for limit results, and returns their rankings unfused: to
// try fusions on (the calibration), each a fuse away.
func (svc *Service) RankLegs(ctx context.Context, userID, query string, limit int) (Ranked, error) {
	phrase, _ := Phrase(query)
	return svc.legs(ctx, retrieval{userID: userID, text: phrase, k: 2 * limit})
}

// Order is the ids of the units f ranks of r, best first.
func (f Fusion) Order(r Ranked) []string {
	found := f.fuse(r)
	out := make([]string, len(found))
	for i, x := range found {
		out[i] = x.hit.Unit.ID()
	}
	return out
}

// fuse ranks the units of both legs.
func (f Fusion) fuse(r Ranked) []fused {
	words, meaning := r.words, r.meaning
	wm := f.Meaning
	if f.Confident > 0 && r.corpus.coverage(r.terms, words, f.Spread) >= f.Confident && !f.sure(meaning) {
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
	return keep(out, f.Keep)
}

// sure reports whether the meaning leg's first unit is at least f.Sure
// more similar to the query than its fifth (or than nothing, with fewer).
func (f Fusion) sure(meaning []Hit) bool {
	if f.Sure <= 0 || len(meaning) == 0 {
		return false
	}
	fifth := 1.0 // a distance: no fifth is as far as can be
	if len(meaning) >= 5 {
		fifth = meaning[4].Distance
	}
	return fifth-meaning[0].Distance >= f.Sure
}

// keep moves each leg's first n units (of found, fused best first) to the
// first 2n places, in their fused order, each the score of the one after
// it at least.
func keep(found []fused, n int) []fused {
	if n <= 0 {
		return found
	}
	first := func(x fused) bool {
		return (x.words && x.wordsRank < n) || (x.meaning && x.meaningRank < n)
	}
	var head, tail []fused
	for _, x := range found {
		if first(x) {
			head = append(head, x)
		} else {
			tail = append(tail, x)
		}
	}
	// Fill the first 2n places: the legs' firsts, then the best others.
	var out []fused
	for len(out) < 2*n && (len(head) > 0 || len(tail) > 0) {
		switch {
		case len(head) == 0 || (len(tail) > 0 && len(out)+len(head) < 2*n && better(tail[0], head[0])):
			out, tail = append(out, tail[0]), tail[1:]
		default:
			out, head = append(out, head[0]), head[1:]
		}
	}
	out = slices.Concat(out, head, tail)
	// A unit moved up scores as the one after it, at least: the order
	// holds wherever results are sorted by score (ties keep it).
	for i := min(2*n, len(out)-1) - 1; i >= 0; i-- {
		out[i].score = max(out[i].score, out[i+1].score)
	}
	return out
}

// better reports whether a ranks before b in fused order.
func better(a, b fused) bool {
	return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.wordsRank, b.wordsRank), cmp.Compare(a.meaningRank, b.meaningRank)) < 0
}

// coverage is the share of the weight of the query's terms (their IDF)
// that the first of the units words ranks holds; 0 if it found none. With
// spread, the query's most common term (the least weight) is left out
// of both: a name said all over the conversation does not make the words
// leg confident on its own.
func (c Corpus) coverage(terms []string, words []Hit, spread bool) float64 {
	if len(words) == 0 {
		return 0
	}
	common := ""
	if spread && len(terms) > 1 {
		common = slices.MinFunc(terms, func(a, b string) int { return cmp.Compare(c.idf(a), c.idf(b)) })
	}
	var all, held float64
	for _, t := range terms {
		if t == common {
			continue
		}
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
