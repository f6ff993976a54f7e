package recall_test

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/storetest"
)

// countingEmbedder embeds every text as the same unit vector, counting
// the texts.
type countingEmbedder struct{ texts int }

func (e *countingEmbedder) Model() string { return "counting/2" }

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

// TestBackfillIndexes: a backfill indexes what the index lacks, what
// another model embedded and what an earlier lexicon made terms of, and
// skips the rest; a second run indexes nothing.
func TestBackfillIndexes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		stored recall.Indexed // how the session's one exchange was indexed before ({}: not at all)
		want   int            // units indexed by the first run
	}{
		{"not indexed", recall.Indexed{}, 1},
		{"current", recall.Indexed{Model: "counting/2", Lexicon: recall.Lexicon}, 0},
		{"another model", recall.Indexed{Model: "other", Lexicon: recall.Lexicon}, 1},
		{"an earlier lexicon", recall.Indexed{Model: "counting/2", Lexicon: recall.Lexicon - 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := inprocdb.New()
			env := storetest.NewEnv(t, db)
			s := env.NewSession(t, "alice")
			q := env.Say(t, s, history.RoleUser, "which trains go swimming?")
			a := env.Say(t, s, history.RoleAssistant, "none of them swim")
			if tc.stored != (recall.Indexed{}) {
				bag := recall.BagOf(q.Content, a.Content)
				bag.Lexicon = tc.stored.Lexicon
				x := recall.Unit{UserID: "alice", SessionID: s.ID, Model: tc.stored.Model, Vector: []float32{1, 0}, Bag: bag,
					Question: recall.Excerpt{ID: q.ID, Seq: q.Seq, Content: q.Content}, Reply: recall.Excerpt{ID: a.ID, Seq: a.Seq, Content: a.Content}}
				if err := db.SaveUnit(ctx, x); err != nil {
					t.Fatal(err)
				}
			}
			e := &countingEmbedder{}
			b := &recall.Backfill{Embedder: e, Store: db, Batch: 8}
			rep, err := b.Run(ctx, "", nil)
			if err != nil || rep.Embedded != tc.want || rep.Skipped != 1-tc.want || e.texts != tc.want {
				t.Fatalf("first run: %+v, %d texts embedded, %v", rep, e.texts, err)
			}
			got, err := db.Embedded(ctx, s.UserID, s.ID)
			if want := (recall.Indexed{Model: "counting/2", Lexicon: recall.Lexicon}); err != nil || got[a.ID] != want {
				t.Fatalf("indexed as %+v, want %+v (%v)", got[a.ID], want, err)
			}
			if rep, err := b.Run(ctx, "", nil); err != nil || rep.Embedded != 0 || rep.Skipped != 1 {
				t.Fatalf("second run: %+v, %v", rep, err)
			}
		})
	}
}
