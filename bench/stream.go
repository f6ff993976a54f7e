package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// StreamedReply is how long the reply of the draft measurement streams
// in make bench, one word every streamedChunk.
const (
	StreamedReply = 20 * time.Second
	streamedChunk = 100 * time.Millisecond
)

// ChunkDelay is how long the model of a run waits between the streamed
// pieces of a reply: only the draft measurement's replies stream slowly.
func ChunkDelay(r openai.ChatCompletionRequest) time.Duration {
	if r.Stream && streamed(r) > 0 {
		return streamedChunk
	}
	return 0
}

// streamed is how long the reply to r is to stream; 0 for at once.
func streamed(r openai.ChatCompletionRequest) time.Duration {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == openai.ChatMessageRoleUser {
			var ms int64
			if _, err := fmt.Sscanf(r.Messages[i].Content, "[slow stream %dms]", &ms); err == nil {
				return time.Duration(ms) * time.Millisecond
			}
			return 0
		}
	}
	return 0
}

// DraftRun is one draft interval's cost and freshness, over a reply that
// streams for StreamedReply.
type DraftRun struct {
	IntervalMs int64   `json:"intervalMs"`
	Default    bool    `json:"default"`
	ReplySecs  float64 `json:"replySeconds"` // how long the reply streamed
	// Extra is what the streamed turn costs over the same turn not
	// streamed: the draft's start, its saves and its deletion.
	ExtraReads   int64 `json:"extraReads"`
	ExtraWrites  int64 `json:"extraWrites"`
	ExtraDeletes int64 `json:"extraDeletes"`
	// CatchUp is how far behind the stream a page loaded at a random
	// moment starts: the age of the draft it reads (polled every 100 ms).
	CatchUpMeanMs float64 `json:"catchUpMeanMs"`
	CatchUpMaxMs  float64 `json:"catchUpMaxMs"`
}

// DraftIntervals are the intervals the draft measurement compares.
var DraftIntervals = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// runDrafts measures each draft interval at once, in separate projects,
// over a reply streaming for reply.
func runDrafts(ctx context.Context, modelURL string, tok *history.TikToken, reply time.Duration) ([]DraftRun, error) {
	out := make([]DraftRun, len(DraftIntervals))
	errs := make([]error, len(DraftIntervals))
	var wg sync.WaitGroup
	for i, iv := range DraftIntervals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = runDraft(ctx, modelURL, tok, iv, reply)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func runDraft(ctx context.Context, modelURL string, tok *history.TikToken, interval, reply time.Duration) (DraftRun, error) {
	project := fmt.Sprintf("bench-draft-%d-%d", interval.Milliseconds(), time.Now().UnixNano())
	a, err := newApp(ctx, modelURL, tok, project, func(c *app.Config) { c.DraftInterval = interval })
	if err != nil {
		return DraftRun{}, err
	}
	defer a.close()
	watcher, err := firestoretest.Dial(ctx, project, &firestoretest.Counter{})
	if err != nil {
		return DraftRun{}, err
	}
	defer watcher.Close()
	s, err := a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{Title: "drafts", NoLearning: true})
	if err != nil {
		return DraftRun{}, err
	}
	run := DraftRun{IntervalMs: interval.Milliseconds(), Default: interval == chat.DefaultDraftInterval, ReplySecs: reply.Seconds()}
	turn := func(n int, onDelta func(string)) (firestoretest.Counts, error) {
		a.clock.advance(time.Minute)
		before := a.counter.Snapshot()
		_, err := a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: "bench-user", SessionID: s.ID,
			Message: fmt.Sprintf("%s turn %d", streamMarker(reply), n), OnDelta: onDelta})
		return a.counter.Snapshot().Sub(before), err
	}
	if _, err := turn(1, nil); err != nil { // the session's first turn does more than the rest
		return run, err
	}
	plain, err := turn(2, nil)
	if err != nil {
		return run, err
	}
	// The stream's timeline: when it had said how much.
	type mark struct {
		at time.Time
		n  int
	}
	var mu sync.Mutex
	var said []mark
	total := 0
	onDelta := func(text string) {
		mu.Lock()
		total += len(text)
		said = append(said, mark{time.Now(), total})
		mu.Unlock()
	}
	// A reader loading the page every 100 ms: how old is what it sees?
	stop := make(chan struct{})
	var ages []float64
	var polling sync.WaitGroup
	polling.Add(1)
	go func() {
		defer polling.Done()
		ref := watcher.Collection(firestoredb.SessionsCollection).Doc(s.ID).Collection(firestoredb.ContextCollection).Doc(firestoredb.DraftDocID)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			snap, err := ref.Get(ctx)
			if err != nil || !snap.Exists() {
				continue
			}
			text, _ := snap.DataAt("text")
			seen, _ := text.(string)
			now := time.Now()
			mu.Lock()
			age := 0.0
			for _, m := range said { // the first moment the stream had said more than the page shows
				if m.n > len(seen) {
					age = ms(now.Sub(m.at))
					break
				}
			}
			mu.Unlock()
			ages = append(ages, age)
		}
	}()
	streamedCost, err := turn(3, onDelta)
	close(stop)
	polling.Wait()
	if err != nil {
		return run, err
	}
	run.ExtraReads = streamedCost.Reads - plain.Reads
	run.ExtraWrites = streamedCost.Writes - plain.Writes
	run.ExtraDeletes = streamedCost.Deletes - plain.Deletes
	for _, a := range ages {
		run.CatchUpMeanMs += a / float64(len(ages))
		run.CatchUpMaxMs = max(run.CatchUpMaxMs, a)
	}
	return run, nil
}

// streamMarker starts a user message whose reply streams slowly for the
// given time.
func streamMarker(d time.Duration) string { return fmt.Sprintf("[slow stream %dms]", d.Milliseconds()) }
