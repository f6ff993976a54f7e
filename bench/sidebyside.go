package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// stepper runs one design's turns one at a time, so that two designs
// can take turns on one emulator.
type stepper struct {
	side  Side
	step  func(turn int) error // runs the turn and records its Sample
	close func()
}

// runSideBySide runs this backend's turns and the baseline's alternately,
// turn by turn, so that both meet the emulator in the same state (warm,
// and holding the same amount of data).
func runSideBySide(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken, rep *Report) (Side, Side, error) {
	p, err := newProject(ctx, cfg, modelURL, tok, rep)
	if err != nil {
		return Side{}, Side{}, err
	}
	defer p.close()
	b, err := newBaseline(ctx, cfg, modelURL, tok)
	if err != nil {
		return Side{}, Side{}, err
	}
	defer b.close()
	if err := alternate(cfg.Turns, p, b); err != nil {
		return Side{}, Side{}, err
	}
	for range cfg.Repeats {
		if err := repeat(ctx, cfg, modelURL, tok, p, b); err != nil {
			return Side{}, Side{}, err
		}
	}
	p.side.Bands = bands(append(slices.Clone(p.side.Samples), p.side.Repeats...), cfg.Bands)
	b.side.Bands = bands(append(slices.Clone(b.side.Samples), b.side.Repeats...), cfg.Bands)
	return p.side, b.side, nil
}

// repeat runs one more conversation of each design, side by side, up to
// cfg.RepeatTurns, and adds its turns to p's and b's Repeats.
func repeat(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken, p, b *stepper) error {
	p2, err := newProject(ctx, cfg, modelURL, tok, &Report{})
	if err != nil {
		return err
	}
	defer p2.close()
	b2, err := newBaseline(ctx, cfg, modelURL, tok)
	if err != nil {
		return err
	}
	defer b2.close()
	if err := alternate(min(cfg.RepeatTurns, cfg.Turns), p2, b2); err != nil {
		return err
	}
	p.side.Repeats = append(p.side.Repeats, p2.side.Samples...)
	b.side.Repeats = append(b.side.Repeats, b2.side.Samples...)
	return nil
}

// warmUpTurns is how many turns of each design warm the emulator's JVM
// up before anything is measured: with 30 of this backend's alone, the
// first band of both designs ran about five times slower than later ones.
const warmUpTurns = 150

// warmUp runs both designs' turns, alternating, in a session each that
// nothing measures, so that the first band does not measure the JVM
// compiling its code paths.
func warmUp(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken) error {
	cfg.Turns = min(cfg.Turns, warmUpTurns)
	p, err := newProject(ctx, cfg, modelURL, tok, &Report{})
	if err != nil {
		return err
	}
	defer p.close()
	b, err := newBaseline(ctx, cfg, modelURL, tok)
	if err != nil {
		return err
	}
	defer b.close()
	return alternate(cfg.Turns, p, b)
}

func newProject(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken, rep *Report) (*stepper, error) {
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-project-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	s, err := a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{Title: "bench",
		Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer, BudgetTokens: cfg.Budget}})
	if err != nil {
		a.close()
		return nil, err
	}
	st := &stepper{side: Side{Name: "this backend (summary_buffer, budget " + fmt.Sprint(cfg.Budget) + " tokens)"}, close: a.close}
	st.step = func(turn int) error {
		a.clock.advance(time.Minute)
		before, calls := a.counter.Snapshot(), a.tokens.calls.Load()
		start := time.Now()
		var first, took, lat time.Duration
		var at firestoretest.Counts
		res, err := a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: "bench-user", SessionID: s.ID,
			Message: fmt.Sprintf("Turn %d: %s", turn, words(turn, 40)), ClientMessageID: fmt.Sprint("t", turn),
			OnDelta: func(string) {
				if first == 0 {
					first = time.Since(start)
				}
			},
			// The backend path ends with the reply; the work after it
			// (which Turn does before it returns, under the Now runner) is in the counts.
			OnReply: func(*chat.TurnResult) {
				took, at = a.model.call()
				lat = time.Since(start) - took
			}})
		if err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		// Context building reads the tail the append returned: count the
		// tokenizer around a rebuild to prove it does no tokenizing.
		c0 := a.tokens.calls.Load()
		if _, err := history.Build(res.Session, res.Tail, a.app.History.BudgetFor(res.Session), 0); err != nil {
			return err
		}
		rep.Tokenizer.ContextBuildTokenizations += a.tokens.calls.Load() - c0
		d := a.counter.Snapshot().Sub(before)
		rep.LargestDocBytes = max(rep.LargestDocBytes, d.Largest)
		st.side.Samples = append(st.side.Samples, Sample{Turn: turn, Reads: d.Reads, Writes: d.Writes, Deletes: d.Deletes, RoundTrips: d.RoundTrips,
			BeforeModel: at.Sub(before).RoundTrips, Bytes: d.Bytes, LatencyMs: ms(lat), TTFTMs: ms(first),
			Tokenizations: a.tokens.calls.Load() - calls})
		return nil
	}
	return st, nil
}

// alternate runs turns 1 to n of each stepper, one turn of each in turn.
func alternate(n int, steppers ...*stepper) error {
	for turn := 1; turn <= n; turn++ {
		for _, st := range steppers {
			if err := st.step(turn); err != nil {
				return err
			}
		}
	}
	return nil
}
