package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// wordEmbedder embeds a text as its length in a 2-dimensional unit vector
// and counts its requests.
type wordEmbedder struct {
	model    string
	requests int
}

func (w *wordEmbedder) Model() string { return w.model }

func (w *wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	w.requests++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{1, float32(len(strings.Fields(t))) / 100}
	}
	return out, nil
}

// testRecallBackfill: a backfill embeds every unit of live sessions (a
// question and the assistant's text answering it, regenerated replies
// included; a message with text and no such partner on its own, as a
// question answered by a tool call; not tool calls), skips those stored with its model, re-embeds
// those of another model, leaves deleted sessions alone, batches its
// requests, waits before each, runs again with nothing to do, and resumes
// after a session.
func testRecallBackfill(t *testing.T, e *Env) {
	ctx := context.Background()
	store, ok := e.DB.(recall.BackfillStore)
	if !ok {
		t.Fatal("the store does not implement recall.BackfillStore")
	}
	one, two, gone := e.NewSession(t, "alice"), e.NewSession(t, "bob"), e.NewSession(t, "alice")
	q1 := e.Say(t, one, history.RoleUser, "trains to Oslo?")
	a1 := e.Say(t, one, history.RoleAssistant, "the night train")
	e.Say(t, one, history.RoleUser, "and the weather?")
	Must[[]history.Message](t)(e.Append(ctx, e.Reload(t, one), "", history.Draft{Role: history.RoleAssistant,
		ToolCalls: []history.ToolCall{{ID: "c1", Type: "function", Function: history.FunctionCall{Name: "weather", Arguments: "{}"}}}}))
	q2 := e.Say(t, two, history.RoleUser, "museums?")
	e.Say(t, two, history.RoleAssistant, "the Munch museum")
	e.Say(t, gone, history.RoleUser, "deleted?")
	e.Say(t, gone, history.RoleAssistant, "yes")
	Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", gone.ID))
	// one's exchange is stored already, by an older model.
	noErr(t, store.SaveUnit(ctx, recall.Unit{UserID: "alice", SessionID: one.ID, Model: "old/2", Vector: []float32{0, 1},
		Question: recall.Excerpt{ID: q1.ID, Seq: q1.Seq, Content: q1.Content}, Reply: recall.Excerpt{ID: a1.ID, Seq: a1.Seq, Content: a1.Content}}))

	emb := &wordEmbedder{model: "words/2"}
	waits := 0
	b := &recall.Backfill{Embedder: emb, Store: store, Batch: 8, Wait: func(context.Context) error { waits++; return nil }}
	var progress []string
	rep, err := b.Run(ctx, "", func(r recall.BackfillReport) { progress = append(progress, r.After) })
	noErr(t, err)
	if rep.Sessions != 2 || rep.Units != 3 || rep.Embedded != 3 || rep.Skipped != 0 || rep.Failed != 0 || rep.Requests != 2 || waits != 2 || len(progress) != 3 {
		t.Fatalf("first run: %+v, %d waits, progress %v", rep, waits, progress)
	}
	hits, err := store.Nearest(ctx, recall.Query{UserID: "alice", Vector: []float32{1, 0}, K: 10})
	noErr(t, err)
	var pair, lone *recall.Unit
	for i := range hits {
		if hits[i].Unit.Reply.ID == a1.ID {
			pair = &hits[i].Unit
		} else {
			lone = &hits[i].Unit
		}
	}
	if len(hits) != 2 || pair == nil || pair.Model != "words/2" || pair.Question.Content != "trains to Oslo?" ||
		lone == nil || lone.Question.Content != "and the weather?" || lone.Reply.ID != "" || lone.Bag.Len == 0 {
		t.Fatalf("alice's units after the backfill: %+v", hits)
	}
	hits, err = store.Nearest(ctx, recall.Query{UserID: "bob", Vector: []float32{1, 0}, K: 10})
	noErr(t, err)
	if len(hits) != 1 || hits[0].Unit.Question.ID != q2.ID {
		t.Fatalf("bob's exchanges after the backfill: %+v", hits)
	}

	again, err := b.Run(ctx, "", nil)
	noErr(t, err)
	if again.Embedded != 0 || again.Skipped != 3 || again.Requests != 0 {
		t.Fatalf("second run: %+v", again)
	}
	last := max(one.ID, two.ID, gone.ID)
	if rest, err := b.Run(ctx, last, nil); err != nil || rest.Sessions != 0 || rest.After != last {
		t.Fatalf("resumed after the last session: %+v, %v", rest, err)
	}
}
