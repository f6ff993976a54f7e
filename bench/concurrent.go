package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// runHotspot runs n turns at once in n sessions, of n users and of one
// user, hotspotRounds times each; times are medians, round trips means.
func runHotspot(ctx context.Context, modelURL string, tok *history.TikToken, n int) (Hotspot, error) {
	h := Hotspot{Turns: n}
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-hotspot-%d", time.Now().UnixNano()))
	if err != nil {
		return h, err
	}
	defer a.close()
	run := func(user func(i int) string) (float64, int64, error) {
		ids := make([]string, n)
		for i := range ids {
			s, err := a.app.Sessions.Create(ctx, user(i), sessions.CreateInput{Title: "t"})
			if err != nil {
				return 0, 0, err
			}
			ids[i] = s.ID
		}
		before, start := a.counter.Snapshot(), time.Now()
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: user(i), SessionID: id, Message: words(i, 30)})
				errs <- err
			}()
		}
		wg.Wait()
		took := time.Since(start)
		close(errs)
		for err := range errs {
			if err != nil {
				return 0, 0, err
			}
		}
		return ms(took), a.counter.Snapshot().Sub(before).RoundTrips, nil
	}
	// Wall times this short are noisy: alternate the two runs and keep
	// the median of each.
	var many, one []float64
	for i := range hotspotRounds {
		ms, rts, err := run(func(j int) string { return fmt.Sprint("many-", i, "-", j) })
		if err != nil {
			return h, err
		}
		many, h.ManyUsersRoundTrips = append(many, ms), h.ManyUsersRoundTrips+rts
		// Each round's one user is new, with all their slots free.
		ms, rts, err = run(func(int) string { return fmt.Sprint("one-", i) })
		if err != nil {
			return h, err
		}
		one, h.OneUserRoundTrips = append(one, ms), h.OneUserRoundTrips+rts
	}
	h.ManyUsersMs, h.OneUserMs = percentile(many, 50), percentile(one, 50)
	h.ManyUsersRoundTrips /= hotspotRounds
	h.OneUserRoundTrips /= hotspotRounds
	return h, err
}

func runThroughput(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken, n int) (Throughput, error) {
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-tp%d-%d", n, time.Now().UnixNano()))
	if err != nil {
		return Throughput{}, err
	}
	defer a.close()
	var mu sync.Mutex
	var lats []float64
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprint("user", i)
			s, err := a.app.Sessions.Create(ctx, user, sessions.CreateInput{Title: "t"})
			for turn := 0; err == nil && turn < cfg.TurnsPerSession; turn++ {
				t0 := time.Now()
				_, err = a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: user, SessionID: s.ID, Message: words(turn, 30),
					OnReply: func(*chat.TurnResult) {
						mu.Lock()
						lats = append(lats, ms(time.Since(t0)))
						mu.Unlock()
					}})
			}
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return Throughput{}, firstErr
	}
	el := time.Since(start).Seconds()
	return Throughput{Sessions: n, Turns: len(lats), TurnsPerSecond: float64(len(lats)) / el, P95Ms: percentile(lats, 95)}, nil
}
