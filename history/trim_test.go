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
			s := &sessions.Session{NextSeq: 6, MessageCount: 6, TokenCount: 27, Feedback: sessions.FeedbackCounts{Up: 1},
				Bookkeeping: sessions.Bookkeeping{LearnFrom: 1, HistoryStartAt: at, PendingToolCalls: []string{"x"}}}
			tl := &Tail{Messages: append([]Message(nil), all...)}
			Trim(s, tl, tc.gone, tc.before, tc.done, tc.keptFrom)
			if s.Bookkeeping.HistoryFrom != tc.wantFrom || seqs(tl.Messages) != tc.wantTail || s.MessageCount != tc.wantCount ||
				s.TokenCount != tc.wantTokens || s.Feedback.Up != tc.wantUp || !s.Bookkeeping.HistoryStartAt.Equal(tc.wantStart) || s.Bookkeeping.LearnFrom != tc.wantLearn {
				t.Errorf("from %d tail %q count %d tokens %d up %d start %v learn %d", s.Bookkeeping.HistoryFrom, seqs(tl.Messages),
					s.MessageCount, s.TokenCount, s.Feedback.Up, s.Bookkeeping.HistoryStartAt, s.Bookkeeping.LearnFrom)
			}
			if (len(s.Bookkeeping.PendingToolCalls) == 0) != (tc.wantFrom == 6) {
				t.Errorf("pending tool calls %v", s.Bookkeeping.PendingToolCalls)
			}
		})
	}
}

// TestCompactionAfterTrim: a summary planned after a trim starts at the
// first message still stored, not after the previous summary's end (the
// messages between are gone), with a previous summary or without; an app
// may record it so, and still may skip nothing stored.
func TestCompactionAfterTrim(t *testing.T) {
	msgs := make([]Message, 0, 40)
	for seq := 500; seq < 540; seq++ {
		role := RoleUser
		if seq%2 == 1 {
			role = RoleAssistant
		}
		msgs = append(msgs, Message{Seq: seq, ParentSeq: seq - 1, Role: role, Tokens: 50, Content: "x"})
	}
	for _, prev := range []*Compaction{nil, {EndSeq: 100, Tokens: 20, Summary: "earlier"}} {
		s := &sessions.Session{NextSeq: 540, Bookkeeping: sessions.Bookkeeping{HistoryFrom: 500}, Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer}}
		p, ok := PlanCompaction(s, &Tail{Messages: msgs, Compaction: prev}, 1500, 100)
		if !ok || p.StartSeq != 500 || p.EndSeq < 500 || p.EndSeq >= 539 {
			t.Errorf("previous %v: plan %+v, %v", prev, p, ok)
		}
		// An app records the summary the context said was due.
		c := &Compaction{StartSeq: p.StartSeq, EndSeq: p.EndSeq, Summary: "s"}
		if err := checkRecorded(s, &Tail{Messages: msgs, Compaction: prev}, c, 1500); err != nil {
			t.Errorf("previous %v: recording %d–%d: %v", prev, c.StartSeq, c.EndSeq, err)
		}
		c.StartSeq = 501
		if err := checkRecorded(s, &Tail{Messages: msgs, Compaction: prev}, c, 1500); err == nil {
			t.Errorf("previous %v: a summary from 501 skips message 500, and was accepted", prev)
		}
	}
}
