package history

import (
	"testing"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// TestTrim: each page of a trim takes what it deleted off the session's
// counters and tail; HistoryFrom and LearnFrom move past it; the last page
// dates the history from the first message kept; a tool result whose call
// went leaves the tail; pending tool calls go with the last message.
func TestTrim(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	all := seqd(msg(RoleUser, 3), msg(RoleAssistant, 5), msg(RoleUser, 2), calls(4, "c1"), result("c1", 7), msg(RoleAssistant, 6))
	all[1].Feedback = &Feedback{Rating: RatingUp}
	for i := range all {
		all[i].ParentSeq = i - 1
	}
	tests := map[string]struct {
		gone       []Message
		before     int
		done       bool
		wantFrom   int
		wantTail   string
		wantCount  int
		wantTokens int
		wantUp     int
		wantStart  time.Time
		wantLearn  int
		keptFrom   time.Time // when the first message kept was written
	}{
		"first page":          {gone: all[:1], before: 2, wantFrom: 1, wantTail: "1 2 3 4 5", wantCount: 5, wantTokens: 24, wantUp: 1, wantStart: at, wantLearn: 1},
		"last page":           {gone: all[:2], before: 2, done: true, wantFrom: 2, wantTail: "2 3 4 5", wantCount: 4, wantTokens: 19, wantStart: at.Add(time.Hour), wantLearn: 2, keptFrom: at.Add(time.Hour)},
		"nothing left below":  {before: 2, done: true, wantFrom: 2, wantTail: "2 3 4 5", wantCount: 6, wantTokens: 27, wantUp: 1, wantStart: at.Add(time.Hour), wantLearn: 2, keptFrom: at.Add(time.Hour)},
		"a page ends at call": {gone: all[:4], before: 5, wantFrom: 4, wantTail: "5", wantCount: 2, wantTokens: 13, wantStart: at, wantLearn: 4},
		"everything":          {gone: all, before: 6, done: true, wantFrom: 6, wantTail: "", wantLearn: 6},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &sessions.Session{NextSeq: 6, MessageCount: 6, TokenCount: 27, LearnFrom: 1, HistoryStartAt: at,
				Feedback: sessions.FeedbackCounts{Up: 1}, PendingToolCalls: []string{"x"}}
			tl := &Tail{Messages: append([]Message(nil), all...)}
			Trim(s, tl, tc.gone, tc.before, tc.done, tc.keptFrom)
			if s.HistoryFrom != tc.wantFrom || seqs(tl.Messages) != tc.wantTail || s.MessageCount != tc.wantCount ||
				s.TokenCount != tc.wantTokens || s.Feedback.Up != tc.wantUp || !s.HistoryStartAt.Equal(tc.wantStart) || s.LearnFrom != tc.wantLearn {
				t.Errorf("from %d tail %q count %d tokens %d up %d start %v learn %d", s.HistoryFrom, seqs(tl.Messages),
					s.MessageCount, s.TokenCount, s.Feedback.Up, s.HistoryStartAt, s.LearnFrom)
			}
			if (len(s.PendingToolCalls) == 0) != (tc.wantFrom == 6) {
				t.Errorf("pending tool calls %v", s.PendingToolCalls)
			}
		})
	}
}
