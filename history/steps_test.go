package history

import (
	"math/rand/v2"
	"testing"

	"github.com/chatmemory/backend/sessions"
)

// TestStepsHoldWhileTheTailIsTrimmed: a conversation of 400 turns, the
// context built each turn from a tail kept as the service keeps it
// (trimmed at its start to the budget every turn): in steps, the first
// message sent moves only at a step, far fewer times than turns, whatever
// the tail's start; "each" moves it almost every turn.
func TestStepsHoldWhileTheTailIsTrimmed(t *testing.T) {
	const turns = 400
	for name, tc := range map[string]struct {
		strategy   sessions.Strategy
		trim       sessions.Trim
		budget     int
		keep       int // what the tail holds, in tokens
		maxChanges int
		minChanges int
	}{
		"token_buffer in steps":       {sessions.StrategyTokenBuffer, "", 2000, 2000, 55, 5},
		"token_buffer, each":          {sessions.StrategyTokenBuffer, sessions.TrimEach, 2000, 2000, turns, turns * 3 / 4},
		"window in steps, short tail": {sessions.StrategyWindow, "", 1 << 20, 1000, 60, 5},
		"window, each, short tail":    {sessions.StrategyWindow, sessions.TrimEach, 1 << 20, 1000, turns, turns * 3 / 4},
	} {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			s := session(tc.strategy, 10, 0)
			s.Context.Trim = tc.trim
			var tl Tail
			first, changes, seq := -1, 0, 0
			for turn := range turns {
				var ex []Message
				for _, role := range []Role{RoleUser, RoleAssistant} {
					m := Message{Seq: seq, ParentSeq: seq - 1, Role: role, Tokens: 5 + r.IntN(40)}
					ex, seq = append(ex, m), seq+1
					s.MessageCount, s.TokenCount, s.NextSeq = s.MessageCount+1, s.TokenCount+m.Tokens, seq
				}
				tl.add(ex, tc.keep)
				c, err := Build(s, &tl, tc.budget+ReplyPriming, 0)
				if err != nil {
					t.Fatal(err)
				}
				if c.Tokens > tc.budget+ReplyPriming || c.Messages[len(c.Messages)-1].Seq != seq-1 {
					t.Fatalf("turn %d: %d tokens, last %d", turn, c.Tokens, c.Messages[len(c.Messages)-1].Seq)
				}
				if c.Messages[0].Seq != first {
					first, changes = c.Messages[0].Seq, changes+1
				}
			}
			if changes > tc.maxChanges || changes < tc.minChanges {
				t.Errorf("the first message sent changed %d times over %d turns, want %d to %d", changes, turns, tc.minChanges, tc.maxChanges)
			}
			t.Logf("the first message sent changed %d times over %d turns", changes, turns)
		})
	}
}
