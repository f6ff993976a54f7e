package recall

import (
	"context"
	"slices"
	"testing"
)

// model6 names a model; retrieval here embeds nothing.
type model6 struct{}

func (model6) Model() string { return "topics/6" }
func (model6) Embed(context.Context, []string) ([][]float32, error) {
	return nil, nil
}

// TestByMeaningRanksWordHits: the units the words leg read rank by meaning
// by their own vectors (of the same model), beside the vector query's;
// one of another model, or already found by the vector query (even
// twice), comes once, as the vector query ranked it.
func TestByMeaningRanksWordHits(t *testing.T) {
	svc := &Service{Embedder: model6{}}
	unit := func(id, model string, v ...float32) Hit {
		return Hit{Unit: Unit{Reply: Excerpt{ID: id}, Model: model, Vector: v}}
	}
	near := []Hit{{Unit: Unit{Reply: Excerpt{ID: "n"}}, Distance: 0.5}, {Unit: Unit{Reply: Excerpt{ID: "n"}}, Distance: 0.5}}
	lexical := []Hit{
		unit("far", "topics/6", 0, 1, 0, 0, 0, 0),
		unit("close", "topics/6", 1, 0.1, 0, 0, 0, 0),
		unit("other", "old/6", 1, 0, 0, 0, 0, 0),
		unit("n", "topics/6", 1, 0, 0, 0, 0, 0),
	}
	var ids []string
	for _, h := range svc.byMeaning(near, lexical, []float32{1, 0, 0, 0, 0, 0}) {
		ids = append(ids, h.Unit.ID())
	}
	if want := []string{"close", "n", "n"}; !slices.Equal(ids, want) {
		t.Errorf("by meaning %v, want %v", ids, want)
	}
	if got := svc.byMeaning(near, lexical, nil); got != nil {
		t.Errorf("without a vector: %v", got)
	}
}
