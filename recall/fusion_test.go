package recall

import (
	"slices"
	"testing"
)

func hitsOf(ids ...string) []Hit {
	var out []Hit
	for _, id := range ids {
		out = append(out, Hit{Unit: Unit{Reply: Excerpt{ID: id}}})
	}
	return out
}

func idsOf(fs []fused) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.hit.Unit.ID())
	}
	return out
}

// TestFuse: a unit both legs found ranks first; every unit either found
// is kept once.
func TestFuse(t *testing.T) {
	got := idsOf(Fusion{K: 60, Words: 1, Meaning: 1}.fuse(Ranked{words: hitsOf("a", "b", "c"), meaning: hitsOf("c", "d")}))
	if got[0] != "c" || !slices.Contains(got, "d") || len(got) != 4 {
		t.Errorf("fused %v: c is in both legs and first", got)
	}
}

// TestFuseKeep: with Keep 2, each leg's first two units are among the
// first four, though units both legs rank lower score more by reciprocal
// rank; their order is the fused one, and the scores follow the order.
func TestFuseKeep(t *testing.T) {
	r := Ranked{words: hitsOf("w1", "b", "c", "d", "e", "w2"), meaning: hitsOf("m1", "b", "c", "d", "e", "m2")}
	plain := idsOf(Fusion{K: 10, Words: 1, Meaning: 1}.fuse(r))
	if slices.Index(plain, "w1") < 4 || slices.Index(plain, "m1") < 4 {
		t.Fatalf("without keep %v: the legs' firsts should rank below the units both found", plain)
	}
	found := Fusion{K: 10, Words: 1, Meaning: 1, Keep: 2}.fuse(r)
	got := idsOf(found)
	for _, id := range []string{"w1", "m1", "b"} {
		if i := slices.Index(got, id); i < 0 || i >= 4 {
			t.Errorf("kept %v: %s at %d, want among the first 4", got, id, i)
		}
	}
	if got[0] != "b" || len(got) != len(plain) {
		t.Errorf("kept %v: b (second in both) first, then the legs' firsts; every unit once", got)
	}
	for i := 1; i < len(found); i++ {
		if found[i].score > found[i-1].score {
			t.Errorf("kept %v: score %d above the one before it", got, i)
		}
	}
}

// TestFuseGate: the words leg's first unit holding the query's weight
// makes it confident (the meaning leg's units then come after its own);
// with Spread, the query's most common term (a name said everywhere)
// counts for nothing; a meaning leg sure of its
// first keeps its weight.
func TestFuseGate(t *testing.T) {
	bag := func(terms ...string) Bag {
		b := Bag{TF: map[string]int{}, Len: len(terms)}
		for _, t := range terms {
			b.TF[t]++
		}
		return b
	}
	name := Hit{Unit: Unit{Reply: Excerpt{ID: "name"}, Bag: bag("priya", "bake")}}
	near := hitsOf("m1", "m2", "m3", "m4", "m5")
	for i := range near {
		near[i].Distance = 0.3 + 0.02*float64(i)
	}
	c := Corpus{N: 100, DF: map[string]int{"priya": 60, "bake": 20, "plate": 30}}
	r := Ranked{words: []Hit{name}, meaning: near, terms: []string{"priya", "plate"}, corpus: c}
	if cov := c.coverage(r.terms, r.words, false); cov < 0.2 || cov > 0.4 {
		t.Errorf("coverage %.2f: priya's weight of priya's and plate's", cov)
	}
	r.terms = []string{"priya", "bake", "plate"}
	if cov := c.coverage(r.terms, r.words, false); cov < 0.6 {
		t.Fatalf("coverage %.2f: the unit holds the name and a rarer word", cov)
	}
	if cov := c.coverage(r.terms, r.words, true); cov >= 0.6 {
		t.Errorf("spread coverage %.2f: without the most common term (the name) less is held", cov)
	}
	gated := Fusion{K: 10, Words: 1, Meaning: 1, Confident: 0.6}
	if got := idsOf(gated.fuse(r)); got[0] != "name" || gated.fuse(r)[1].score != 0 {
		t.Errorf("confident %v: the meaning leg's weight is 0", got)
	}
	spread := gated
	spread.Spread = true
	if got := spread.fuse(r); got[1].score == 0 {
		t.Errorf("spread %v: not confident, the meaning leg weighs", idsOf(got))
	}
	sure := gated
	sure.Sure = 0.05 // the first is 0.08 nearer than the fifth
	if got := sure.fuse(r); got[1].score == 0 {
		t.Errorf("sure %v: the meaning leg keeps its weight", idsOf(got))
	}
	sure.Sure = 0.1
	if got := sure.fuse(r); got[1].score != 0 {
		t.Errorf("not sure enough %v: the meaning leg's weight is 0", idsOf(got))
	}
}
