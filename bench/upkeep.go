package bench

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// UpkeepRun is the memory model's daily upkeep, measured on the emulator:
// message retention trimming a long session, and the roll-ups of one
// user's episodic history.
type UpkeepRun struct {
	Trim    UpkeepCost   `json:"messageRetention"`
	RollUps []UpkeepCost `json:"historyRollUps"`
	// BlockTokens is the user's memory block after the roll-ups: their
	// history (no profile or facts were learned).
	BlockTokens int `json:"historyBlockTokens"`
}

// UpkeepCost is what one piece of upkeep took.
type UpkeepCost struct {
	Name       string  `json:"name"`
	Items      int     `json:"items"` // messages deleted, or sessions behind the history
	Reads      int64   `json:"reads"`
	Writes     int64   `json:"writes"`
	Deletes    int64   `json:"deletes"`
	RoundTrips int64   `json:"roundTrips"`
	ModelCalls int64   `json:"modelCalls"`
	Ms         float64 `json:"ms"`
}

// runUpkeep measures both on fresh projects of one emulator: exchanges
// trimmed out of a session of exchanges (one every 1.2 hours over 10 days,
// with a 5-day period), and a user's history over sessions (one every 6
// days over 8 months).
func runUpkeep(ctx context.Context, modelURL string, tok *history.TikToken, exchanges, sessionsN int) (*UpkeepRun, error) {
	run := &UpkeepRun{}
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-trim-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	defer a.close()
	s, err := a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{})
	if err != nil {
		return nil, err
	}
	for i := 1; i <= exchanges; i++ {
		a.clock.advance(10 * 24 * time.Hour / time.Duration(exchanges))
		if _, err := a.app.Chat.Append(ctx, "bench-user", s.ID, fmt.Sprint("x", i), "", []history.Draft{
			{Role: history.RoleUser, Content: fmt.Sprintf("Question %d: %s", i, words(i, 40))},
			{Role: history.RoleAssistant, Content: fmt.Sprintf("Answer %d: %s", i, words(i+1, 60))},
		}); err != nil {
			return nil, fmt.Errorf("upkeep, exchange %d: %w", i, err)
		}
	}
	a.app.Sweeper.Policy.Messages = 5 * sessions.Day
	before, start := a.counter.Snapshot(), time.Now()
	r, err := a.app.Sweeper.Run(ctx, false)
	if err != nil {
		return nil, err
	}
	run.Trim = cost(fmt.Sprintf("a sweep trimming a session of %d messages", 2*exchanges), r.MessagesDeleted, a.counter.Snapshot().Sub(before), 0, time.Since(start))

	h, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-history-%d", time.Now().UnixNano()), func(c *app.Config) { c.HistoryShare = 30 })
	if err != nil {
		return nil, err
	}
	defer h.close()
	var calls atomic.Int64
	h.model.seen = func(req chat.Request) {
		if req.System == prompts.MonthNote || req.System == prompts.Background {
			calls.Add(1)
		}
	}
	session := func(i int) error {
		s, err := h.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{Title: fmt.Sprintf("Project %d: %s", i, words(i, 4))})
		if err != nil {
			return err
		}
		_, err = h.app.Chat.Append(ctx, "bench-user", s.ID, "", "", []history.Draft{
			{Role: history.RoleUser, Content: fmt.Sprintf("Help with project %d: %s", i, words(i, 30))},
			{Role: history.RoleAssistant, Content: words(i+2, 50)},
		})
		return err
	}
	for i := 1; i <= sessionsN; i++ {
		h.clock.advance(6 * 24 * time.Hour)
		if err := session(i); err != nil {
			return nil, fmt.Errorf("upkeep, session %d: %w", i, err)
		}
	}
	rollUp := func(name string, items int) {
		before, n, start := h.counter.Snapshot(), calls.Load(), time.Now()
		h.app.RollUpHistories(ctx, 0)
		run.RollUps = append(run.RollUps, cost(name, items, h.counter.Snapshot().Sub(before), calls.Load()-n, time.Since(start)))
	}
	rollUp("the first roll-up (7 months of sessions)", sessionsN)
	h.clock.advance(24 * time.Hour)
	if err := session(sessionsN + 1); err != nil {
		return nil, err
	}
	rollUp("a day later, one new session", 1)
	rollUp("again at once: nothing to do", 0)
	h.clock.advance(31 * 24 * time.Hour)
	rollUp("a month later: a month moves into the background", 0)
	v, err := h.app.Memory.Get(ctx, "bench-user")
	if err != nil {
		return nil, err
	}
	run.BlockTokens = v.BlockTokens
	return run, nil
}

func cost(name string, items int, d firestoretest.Counts, calls int64, took time.Duration) UpkeepCost {
	return UpkeepCost{Name: name, Items: items, Reads: d.Reads, Writes: d.Writes, Deletes: d.Deletes, RoundTrips: d.RoundTrips,
		ModelCalls: calls, Ms: float64(took.Microseconds()) / 1000}
}

func (r *Report) writeUpkeep(w io.Writer) {
	u := r.Upkeep
	if u == nil {
		return
	}
	fmt.Fprintln(w, "The memory model's upkeep (the daily sweep and roll-up), on the emulator:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| work | items | reads | writes | deletes | round trips | model calls | ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, c := range append([]UpkeepCost{u.Trim}, u.RollUps...) {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %.0f |\n", c.Name, c.Items, c.Reads, c.Writes, c.Deletes, c.RoundTrips, c.ModelCalls, c.Ms)
	}
	fmt.Fprintf(w, "\nThe history in the memory block afterwards: %d tokens (of the block's 2,000; its share is 30%%).\n\n", u.BlockTokens)
}
