package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// RecallRun compares turns without embeddings, with each exchange embedded
// after its reply (recall off), and with recall from all sessions on, in
// alternation on one emulator, the embedding service answering after
// EmbeddingLatency.
type RecallRun struct {
	Turns int          `json:"turns"`
	Sides []RecallSide `json:"sides"`
}

// RecallSide is one way of running turns.
type RecallSide struct {
	Name           string  `json:"name"`
	TTFTP50        float64 `json:"ttftP50Ms"`
	P50Ms          float64 `json:"backendPathP50Ms"`
	BeforeModel    float64 `json:"roundTripsBeforeModel"` // Firestore RPCs, mean
	RoundTrips     float64 `json:"roundTripsPerTurn"`
	Reads          float64 `json:"readsPerTurn"`
	Writes         float64 `json:"writesPerTurn"`
	EmbeddingCalls float64 `json:"embeddingCallsPerTurn"`
}

// EmbeddingLatency is the embedding service's latency in the recall run.
const EmbeddingLatency = 50 * time.Millisecond

// recallTurns is how many turns each side runs.
const recallTurns = 40

// runRecall runs the three sides; embeddingCalls reads the embedding
// service's count of requests.
func runRecall(ctx context.Context, modelURL string, tok *history.TikToken, embeddingCalls func() int64) (*RecallRun, error) {
	plain, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-recall-none-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	defer plain.close()
	embedded, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-recall-%d", time.Now().UnixNano()), func(c *app.Config) { c.Embeddings = true })
	if err != nil {
		return nil, err
	}
	defer embedded.close()
	type side struct {
		name    string
		a       *benchApp
		session *sessions.Session
		samples []Sample
		calls   int64
	}
	var sides []*side
	for _, s := range []struct {
		name   string
		a      *benchApp
		recall sessions.Recall
	}{{"no embeddings", plain, sessions.RecallOff}, {"exchanges embedded, recall off", embedded, sessions.RecallOff},
		{"recall in this session", embedded, sessions.RecallSession}, {"recall from all sessions", embedded, sessions.RecallAll}} {
		sess, err := s.a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{Title: s.name, Context: sessions.ContextSettings{Recall: s.recall}})
		if err != nil {
			return nil, err
		}
		sides = append(sides, &side{name: s.name, a: s.a, session: sess})
	}
	for turn := 1; turn <= recallTurns; turn++ {
		for _, sd := range sides {
			a := sd.a
			a.clock.advance(time.Minute)
			before, calls := a.counter.Snapshot(), embeddingCalls()
			start := time.Now()
			var first, lat time.Duration
			var at firestoretest.Counts
			_, err := a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: "bench-user", SessionID: sd.session.ID,
				Message: fmt.Sprintf("Turn %d: %s", turn, words(turn, 40)), ClientMessageID: fmt.Sprint("r", turn),
				OnDelta: func(string) {
					if first == 0 {
						first = time.Since(start)
					}
				},
				OnReply: func(*chat.TurnResult) {
					var took time.Duration
					took, at = a.model.call()
					lat = time.Since(start) - took
				}})
			if err != nil {
				return nil, fmt.Errorf("recall run, %s, turn %d: %w", sd.name, turn, err)
			}
			d := a.counter.Snapshot().Sub(before)
			sd.calls += embeddingCalls() - calls
			sd.samples = append(sd.samples, Sample{Turn: turn, Reads: d.Reads, Writes: d.Writes, RoundTrips: d.RoundTrips,
				BeforeModel: at.Sub(before).RoundTrips, LatencyMs: ms(lat), TTFTMs: ms(first)})
		}
	}
	run := &RecallRun{Turns: recallTurns}
	for _, sd := range sides {
		b := bands(sd.samples, [][2]int{{1, recallTurns}})[0]
		var before float64
		for _, s := range sd.samples {
			before += float64(s.BeforeModel)
		}
		run.Sides = append(run.Sides, RecallSide{Name: sd.name, TTFTP50: b.TTFTP50, P50Ms: b.P50Ms, BeforeModel: before / recallTurns,
			RoundTrips: b.RoundTrips, Reads: b.Reads, Writes: b.Writes, EmbeddingCalls: float64(sd.calls) / recallTurns})
	}
	return run, nil
}

func (r *Report) writeRecall(w io.Writer) {
	if r.Recall == nil {
		return
	}
	fmt.Fprintf(w, "Recall: %d streamed turns each, alternating, the embedding service answering after %d ms (Firestore RPCs before the model count the recall's own, a query a term of the message among them, sent at once beside the claim's commit: the turn waits for 2 round trips one after another, TestRecallRoundTrips):\n\n", r.Recall.Turns, EmbeddingLatency.Milliseconds())
	fmt.Fprintln(w, "| turns | first token p50 ms | backend path p50 ms | Firestore RPCs before the model | round trips/turn, all included | reads/turn | writes/turn | embedding calls/turn |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, s := range r.Recall.Sides {
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s.Name, s.TTFTP50, s.P50Ms, s.BeforeModel, s.RoundTrips, s.Reads, s.Writes, s.EmbeddingCalls)
	}
	fmt.Fprintln(w)
	if len(r.Quality) == 0 {
		return
	}
	fmt.Fprintf(w, "Recall quality on the labeled fixture (%d queries over %d exchanges; the right exchange among the first 5, and mean reciprocal rank):\n\n", r.Quality[0].Queries, r.Quality[0].Exchanges)
	fmt.Fprintln(w, "| embedder | search recall@5 | search MRR | recall in context recall@5 | recall in context MRR |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, q := range r.Quality {
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.2f |\n", q.Embedder, q.SearchRecallAt5, q.SearchMRR, q.RecallRecallAt5, q.RecallMRR)
	}
	fmt.Fprintln(w)
	WriteSearchQuality(w, r.Search)
	WriteConversations(w, r.Conversations)
	WriteCalibration(w, r.Calibration)
	WriteReach(w, r.HeldOutReach)
	WriteSearchCost(w, r.SearchCost)
	WriteSearchScale(w, r.SearchScale)
}
