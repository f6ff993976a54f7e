package systemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// TestWarmTurnLimits: a turn on the instance that ran the session's last
// turn claims from what that instance kept, and is held to the limits
// all the same when another instance changed what it kept: a slot taken
// elsewhere this minute is not taken twice (the claim is refused and the
// turn reads), and a day's spend reached elsewhere refuses the turn
// before the model is called, its message kept for a retry under its key
// to answer once the day allows.
func TestWarmTurnLimits(t *testing.T) {
	h := newHarnessOn(t, "firestore", func(c *app.Config) { c.TurnsPerMinute, c.TokensPerDay = 2, 10_000 })
	alice := h.signUp()
	elsewhere := app.Firestore(h.firestore) // another instance
	ctx := context.Background()
	first := h.turn(alice.token, map[string]any{"message": "one"})
	id := first.SessionID
	h.idle()
	h.clock.Advance(time.Minute)
	// Another instance takes one of the 2 slots this minute: this one
	// still knows both as free, and may take only the other.
	day := chat.Day(h.clock.Now())
	q := chat.TurnQuery{UserID: alice.uid, SessionID: id, Day: day, Slots: []int{0, 1}}
	if _, err := elsewhere.RunTurn(ctx, q, nil, func(st *chat.TurnState) (*chat.TurnWrite, error) {
		return &chat.TurnWrite{Slot: 0, Minute: h.clock.Now().Unix() / 60}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h.turn(alice.token, map[string]any{"sessionId": id, "message": "two"})
	h.idle()
	r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "three"})
	if r.status != 429 {
		t.Fatalf("a third turn in a minute of 2: %d %s", r.status, r.body)
	}
	// Another instance spends the day's tokens.
	h.clock.Advance(time.Minute)
	if err := elsewhere.AddTokens(ctx, alice.uid, day, 10_000); err != nil {
		t.Fatal(err)
	}
	calls := len(h.model.Requests())
	r = h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "four", "clientMessageId": "four"})
	if r.status != 429 || r.errorCode() != "rate_limited" {
		t.Fatalf("a turn past the day's spend: %d %s", r.status, r.body)
	}
	if n := len(h.model.Requests()); n != calls {
		t.Errorf("the model was called %d times for a refused turn", n-calls)
	}
	h.idle()
	if kept := h.messages(alice.token, id); len(kept) != 5 || kept[4].Content != "four" {
		t.Fatalf("after the refusal: %d messages, want the question kept as the 5th", len(kept))
	}
	if s := h.session(id); s.Bookkeeping.Answering != nil {
		t.Errorf("the refused turn left its lease: %+v", s.Bookkeeping.Answering)
	}
	// The next day, a retry under the key answers the message kept.
	h.clock.Advance(24 * time.Hour)
	again := h.turn(alice.token, map[string]any{"sessionId": id, "message": "four", "clientMessageId": "four"})
	all := h.checkParents(alice.token, id)
	if again.Reply.Content == "" || len(all) != 6 || all[4].Content != "four" || again.UserMessage.ID != all[4].ID {
		t.Errorf("after the retry: %d messages, the last question %q", len(all), all[len(all)-2].Content)
	}
}

// TestSecondTurnIsWarm: a new chat's first turn names it (a generated
// title, written after the reply), and its second turn, on the same
// instance, still claims from what the instance kept: it reads the 3
// documents a warm turn reads, not the 7 of a cold one. The title's write
// costs the first turn's after-turn work one read more.
func TestSecondTurnIsWarm(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.LongTermMemory = true })
	alice := h.signUp()
	first := h.turn(alice.token, map[string]any{"message": "Plan a trip to Bergen", "clientMessageId": "k1"})
	h.idle()
	if s := h.session(first.SessionID); s.TitleSource != sessions.TitleGenerated {
		t.Fatalf("the first turn left the title %q", s.Title)
	}
	h.clock.Advance(time.Minute)
	before := h.counter.Snapshot()
	h.turn(alice.token, map[string]any{"sessionId": first.SessionID, "message": "And the fjords?", "clientMessageId": "k2"})
	h.idle()
	if got := h.counter.Snapshot().Sub(before); got.Reads != 3 {
		t.Errorf("the second turn: %s; want the 3 reads of a warm turn", got)
	}
}
