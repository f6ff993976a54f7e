package bench

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
)

// baseline is the common design: every turn reads the whole history, then
// appends the user's message and the reply with separate writes.
func newBaseline(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken) (*stepper, error) {
	counter := &firestoretest.Counter{}
	client, err := firestoretest.Dial(ctx, fmt.Sprintf("bench-baseline-%d", time.Now().UnixNano()), counter)
	if err != nil {
		return nil, err
	}
	model := &timedModel{Model: llm.NewOpenAI("bench", modelURL, nil), counter: counter}
	msgs := client.Collection("baseline_sessions").Doc("s1").Collection("messages")
	st := &stepper{side: Side{Name: "baseline (whole history every turn)"}, close: func() { client.Close() }}
	type doc struct {
		Seq     int    `firestore:"seq"`
		Role    string `firestore:"role"`
		Content string `firestore:"content"`
		Tokens  int    `firestore:"tokens"`
	}
	st.step = func(turn int) error {
		before := counter.Snapshot()
		start := time.Now()
		snaps, err := msgs.OrderBy("seq", firestore.Asc).Documents(ctx).GetAll()
		if err != nil {
			return err
		}
		var hist []history.Message
		for _, sn := range snaps {
			var d doc
			if err := sn.DataTo(&d); err != nil {
				return err
			}
			hist = append(hist, history.Message{Seq: d.Seq, Role: history.Role(d.Role), Content: d.Content, Tokens: d.Tokens})
		}
		user := fmt.Sprintf("Turn %d: %s", turn, words(turn, 40))
		um := history.Message{Role: history.RoleUser, Content: user}
		if _, _, err := msgs.Add(ctx, doc{Seq: len(hist), Role: "user", Content: user, Tokens: tok.Count("gpt-4o-mini", &um)}); err != nil {
			return err
		}
		hist = append(hist, um)
		var first time.Duration
		r, err := model.Generate(ctx, chat.Request{Model: "gpt-4o-mini", System: "You are a helpful assistant.", Messages: history.FitBudget(hist, cfg.Budget)},
			func(string) {
				if first == 0 {
					first = time.Since(start)
				}
			})
		if err != nil {
			return err
		}
		took, at := model.call()
		am := history.Message{Role: history.RoleAssistant, Content: r.Content}
		if _, _, err := msgs.Add(ctx, doc{Seq: len(hist), Role: "assistant", Content: r.Content, Tokens: tok.Count("gpt-4o-mini", &am)}); err != nil {
			return err
		}
		d := counter.Snapshot().Sub(before)
		st.side.Samples = append(st.side.Samples, Sample{Turn: turn, Reads: d.Reads, Writes: d.Writes, Deletes: d.Deletes, RoundTrips: d.RoundTrips,
			BeforeModel: at.Sub(before).RoundTrips, Bytes: d.Bytes, LatencyMs: ms(time.Since(start) - took), TTFTMs: ms(first), Tokenizations: 2})
		return nil
	}
	return st, nil
}

// hotspotRounds is how often the hotspot comparison is run.
const hotspotRounds = 5
