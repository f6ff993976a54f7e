package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// MemoryPath compares the path an app running its own model uses (the
// session's context, then the exchange appended with the context's
// version as ifMatch: GET …/context and POST …/messages) with a one-document design, the one Genkit Go's Firestore
// session store gives an app: the whole history as JSON in one document,
// loaded every turn and saved in a transaction.
type MemoryPath struct {
	MessageBytes int        `json:"messageBytes"`
	Project      []PathBand `json:"project"`
	OneDocument  []PathBand `json:"oneDocument"`
	// The work after each append (embedding when on, the summary when
	// due), after the app has its answer: the summaries made, and the
	// documents it read and wrote per exchange, mean.
	Turns             int     `json:"turns"`
	Summaries         int     `json:"summaries"`
	AfterAppendReads  float64 `json:"afterAppendReadsPerTurn"`
	AfterAppendWrites float64 `json:"afterAppendWritesPerTurn"`
}

// PathBand summarizes the turns From..To of one design on the memory path.
type PathBand struct {
	From       int     `json:"from"`
	To         int     `json:"to"`
	Reads      float64 `json:"readsPerTurn"`
	Writes     float64 `json:"writesPerTurn"`
	RoundTrips float64 `json:"roundTripsPerTurn"`
	P50Ms      float64 `json:"p50Ms"`
	DocBytes   int     `json:"documentBytes"` // the one document's size at the band's end
}

const memoryPathMessageBytes = 400

// runMemoryPath runs both designs turn by turn, alternating, on one
// emulator.
func runMemoryPath(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken) (*MemoryPath, error) {
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-memory-path-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	defer a.close()
	counter := &firestoretest.Counter{}
	client, err := firestoretest.Dial(ctx, fmt.Sprintf("bench-one-document-%d", time.Now().UnixNano()), counter)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	text := func(turn int, role string) string {
		t := fmt.Sprintf("%s %d: %s", role, turn, words(turn, 80))
		return t[:min(len(t), memoryPathMessageBytes)] + strings.Repeat(".", max(0, memoryPathMessageBytes-len(t)))
	}
	var project, one []Sample
	var afterReads, afterWrites int64
	size := map[int]int{}
	// conversation runs one conversation of each design, n turns, turn by
	// turn; only the long one's after-append work and sizes are reported.
	conversation := func(n int, long bool) (*sessions.Session, error) {
		s, err := a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{Title: "memory path"})
		if err != nil {
			return nil, err
		}
		doc := client.Collection("genkit_sessions").NewDoc()
		for turn := 1; turn <= n; turn++ {
			a.clock.advance(time.Minute)
			before := a.counter.Snapshot()
			start := time.Now()
			p, err := a.app.Chat.Preview(ctx, "bench-user", s.ID)
			if err != nil {
				return nil, fmt.Errorf("memory path, turn %d: %w", turn, err)
			}
			res, err := a.app.Chat.Append(ctx, "bench-user", s.ID, fmt.Sprint("m", turn), p.Version, []history.Draft{
				{Role: history.RoleUser, Content: text(turn, "user")}, {Role: history.RoleAssistant, Content: text(turn, "assistant")}})
			if err != nil {
				return nil, fmt.Errorf("memory path, turn %d: %w", turn, err)
			}
			d := a.counter.Snapshot().Sub(before)
			project = append(project, Sample{Turn: turn, Reads: d.Reads, Writes: d.Writes, RoundTrips: d.RoundTrips, LatencyMs: ms(time.Since(start))})
			before = a.counter.Snapshot()
			a.app.Chat.AfterAppend(ctx, res)
			if d = a.counter.Snapshot().Sub(before); long {
				afterReads, afterWrites = afterReads+d.Reads, afterWrites+d.Writes
			}

			before = counter.Snapshot()
			start = time.Now()
			size1, err := oneDocumentTurn(ctx, client, doc, text(turn, "user"), text(turn, "assistant"))
			if err != nil {
				return nil, fmt.Errorf("one document, turn %d: %w", turn, err)
			}
			d = counter.Snapshot().Sub(before)
			one = append(one, Sample{Turn: turn, Reads: d.Reads, Writes: d.Writes, RoundTrips: d.RoundTrips, LatencyMs: ms(time.Since(start))})
			if long {
				size[turn] = size1
			}
		}
		return s, nil
	}
	s, err := conversation(cfg.Turns, true)
	if err != nil {
		return nil, err
	}
	for range cfg.Repeats {
		if _, err := conversation(min(cfg.RepeatTurns, cfg.Turns), false); err != nil {
			return nil, err
		}
	}
	cs, err := a.app.History.Compactions(ctx, s)
	if err != nil {
		return nil, err
	}
	mp := &MemoryPath{MessageBytes: memoryPathMessageBytes, Turns: cfg.Turns, Summaries: len(cs),
		AfterAppendReads: float64(afterReads) / float64(cfg.Turns), AfterAppendWrites: float64(afterWrites) / float64(cfg.Turns)}
	for _, b := range bands(project, cfg.Bands) {
		mp.Project = append(mp.Project, PathBand{From: b.From, To: b.To, Reads: b.Reads, Writes: b.Writes, RoundTrips: b.RoundTrips, P50Ms: b.P50Ms})
	}
	for _, b := range bands(one, cfg.Bands) {
		mp.OneDocument = append(mp.OneDocument, PathBand{From: b.From, To: b.To, Reads: b.Reads, Writes: b.Writes, RoundTrips: b.RoundTrips, P50Ms: b.P50Ms, DocBytes: size[b.To]})
	}
	return mp, nil
}

// genkitMessage and genkitSession are the shape the one-document design
// stores: the session's state, history included, as JSON.
type genkitMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type genkitSession struct {
	ID      string          `json:"id"`
	History []genkitMessage `json:"history"`
}

// oneDocumentTurn loads the session (the app's GET), then saves it with
// the exchange added in a transaction (its update), and returns the
// document's size.
func oneDocumentTurn(ctx context.Context, client *firestore.Client, doc *firestore.DocumentRef, user, reply string) (int, error) {
	load := func(snap *firestore.DocumentSnapshot) (*genkitSession, error) {
		s := &genkitSession{ID: doc.ID}
		if !snap.Exists() {
			return s, nil
		}
		raw, err := snap.DataAt("state")
		if err != nil {
			return nil, err
		}
		return s, json.Unmarshal([]byte(raw.(string)), s)
	}
	snap, err := doc.Get(ctx)
	if err != nil && !notFound(err) {
		return 0, err
	}
	if _, err := load(snap); err != nil {
		return 0, err
	}
	n := 0
	err = client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(doc)
		if err != nil && !notFound(err) {
			return err
		}
		s, err := load(snap)
		if err != nil {
			return err
		}
		s.History = append(s.History, genkitMessage{"user", user}, genkitMessage{"model", reply})
		raw, err := json.Marshal(s)
		if err != nil {
			return err
		}
		n = len(raw)
		return tx.Set(doc, map[string]any{"state": string(raw)})
	})
	return n, err
}

// writeMemoryPath writes the memory path's table.
func (r *Report) writeMemoryPath(w io.Writer) {
	mp := r.MemoryPath
	if mp == nil {
		return
	}
	fmt.Fprintf(w, "The memory path of an app with its own model (GET …/context, then POST …/messages with the exchange and the context's version as ifMatch; %d-byte messages) against one document holding the whole history as JSON (Genkit Go's Firestore session store: load, then save in a transaction), alternating turns on one emulator:\n\n", mp.MessageBytes)
	fmt.Fprintln(w, "| turns | design | round trips/turn | reads/turn | writes/turn | p50 ms | p50: one document ÷ this backend |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for i, p := range mp.Project {
		if i >= len(mp.OneDocument) {
			break
		}
		o := mp.OneDocument[i]
		fmt.Fprintf(w, "| %d–%d | this backend | %.1f | %.1f | %.1f | %.1f | %.2f× |\n", p.From, p.To, p.RoundTrips, p.Reads, p.Writes, p.P50Ms, div(o.P50Ms, p.P50Ms))
		fmt.Fprintf(w, "| %d–%d | one document (%d KiB at turn %d) | %.1f | %.1f | %.1f | %.1f | |\n", o.From, o.To, o.DocBytes/1024, o.To, o.RoundTrips, o.Reads, o.Writes, o.P50Ms)
	}
	fmt.Fprintf(w, "After each append, once the app has its answer, the server folds old messages into the summary when it is due (summary_buffer on this path too): %d summaries in %d exchanges; that work read %.2f and wrote %.2f documents per exchange, on average.\n\n",
		mp.Summaries, mp.Turns, mp.AfterAppendReads, mp.AfterAppendWrites)
}

func notFound(err error) bool { return status.Code(err) == codes.NotFound }
