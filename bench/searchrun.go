package bench

import (
	"context"
	"fmt"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/recall"
)

// runSearch measures search with the first embedder into rep: its quality
// on both fixtures (each leg, fused, recall, BM25), the fusion's grid on
// the conversation fixture's dev part (an error if, with the embedder
// search's fusion was chosen with, it chooses another), and what a search
// costs on the emulator.
func runSearch(ctx context.Context, cfg Config, tok history.Counter, rep *Report, log func(string, ...any)) error {
	var err error
	log("search quality: %s on the search fixture, beside plain BM25", cfg.Embedders[0].Model())
	if rep.Search, err = MeasureSearch(ctx, cfg.Embedders[0], tok); err != nil {
		return fmt.Errorf("search quality: %w", err)
	}
	log("search quality: the conversation fixture, each leg, fused, recall and BM25")
	if rep.Conversations, err = MeasureConversations(ctx, cfg.Embedders[0], tok, cfg.Conversations); err != nil {
		return fmt.Errorf("conversation quality: %w", err)
	}
	log("search fusion: the grid on the conversation fixture's dev part")
	if rep.Calibration, err = CalibrateFusion(ctx, cfg.Embedders[0], tok, cfg.Conversations); err != nil {
		return fmt.Errorf("fusion calibration: %w", err)
	}
	if chosen := rep.Calibration[0].Fusion; chosen != recall.DefaultFusion {
		if m := cfg.Embedders[0].Model(); m != calibratedWith() || cfg.Conversations != 0 {
			log("fusion calibration: with %s, on %d of the dev part's conversations (0: all), the grid chooses %+v; search uses %+v, chosen with %s on all", m, cfg.Conversations, chosen, recall.DefaultFusion, calibratedWith())
		} else {
			return fmt.Errorf("fusion calibration: the dev part chooses %+v, search uses %+v", chosen, recall.DefaultFusion)
		}
	}
	log("search fusion: the same grid on the held-out part, only to see what it reaches")
	reach, err := HeldOutReach(ctx, cfg.Embedders[0], tok, cfg.Conversations, recall.DefaultFusion)
	if err != nil {
		return fmt.Errorf("fusion reach: %w", err)
	}
	rep.HeldOutReach = &reach
	if rep.SearchScale, err = MeasureSearchScale(ctx, cfg.SearchUsers, cfg.SearchUnits, 100, log); err != nil {
		return fmt.Errorf("search at scale: %w", err)
	}
	log("search cost: the dev part in the emulator")
	if rep.SearchCost, err = MeasureSearchCost(ctx, cfg.Embedders[0], tok); err != nil {
		return fmt.Errorf("search cost: %w", err)
	}
	return nil
}

// calibratedWith is the model recall.DefaultFusion was chosen with: the
// offline stand-in with its word vectors.
func calibratedWith() string { return llm.Lexical{Words: new(llm.WordVectors)}.Model() }
