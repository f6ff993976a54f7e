package systemtest_test

import (
	"testing"
	"time"

	"github.com/chatmemory/backend/app"
)

type gauge struct {
	Used     int       `json:"used"`
	Limit    int       `json:"limit"`
	ResetsAt time.Time `json:"resetsAt"`
}

type standing struct {
	Day                     string `json:"day"`
	Tokens, Turns, Messages gauge
}

// TestUsage: GET /usage (and the callable) says what the caller spent
// today against the daily limit, and the turns and appended messages of
// this minute against theirs, with when each resets; another user's
// spend is not theirs; a session carries its replies' totals and last
// model, counted in the turn's own commits.
func TestUsage(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.TurnsPerMinute, c.MessagesPerMinute, c.TokensPerDay = 20, 30, 100_000 })
		h.echoWithUsage("Counted")
		alice, bob := h.signUp(), h.signUp()
		var u standing
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &u)
		if u.Day != "2026-03-10" || u.Tokens != (gauge{0, 100_000, time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)}) ||
			u.Turns.Used != 0 || u.Turns.Limit != 20 || u.Messages.Limit != 30 || !u.Turns.ResetsAt.Equal(time.Date(2026, 3, 10, 12, 1, 0, 0, time.UTC)) {
			t.Fatalf("a new user's usage: %+v", u)
		}
		id := h.newSession(alice.token, map[string]any{"title": "counted"})
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "one"})
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "two"})
		h.do("POST", "/sessions/"+id+"/messages", alice.token, map[string]any{"messages": []map[string]any{
			{"role": "user", "content": "three"}, {"role": "assistant", "content": "four"}, {"role": "user", "content": "five"}}}).want(t, 201)
		h.turn(bob.token, map[string]any{"message": "bob's"})
		h.idle()
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &u)
		if u.Turns.Used != 2 || u.Messages.Used != 3 || u.Tokens.Used < 2*107 {
			t.Fatalf("alice's usage: %+v", u)
		}
		var viaCallable struct{ Result standing }
		h.do("POST", "/callable/usage", alice.token, map[string]any{"data": map[string]any{}}).want(t, 200).decode(t, &viaCallable)
		if viaCallable.Result != u {
			t.Errorf("callable: %+v, REST: %+v", viaCallable.Result, u)
		}
		var s struct {
			Usage struct {
				PromptTokens, CompletionTokens, Turns int
				LastModel                             string
			}
		}
		h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).decode(t, &s)
		if s.Usage.Turns != 2 || s.Usage.PromptTokens != 200 || s.Usage.CompletionTokens != 14 || s.Usage.LastModel == "" {
			t.Errorf("the session's totals: %+v", s.Usage)
		}
		h.do("GET", "/usage", "", nil).want(t, 401)
	})
}
