package history

import (
	"testing"

	"github.com/chatmemory/backend/sessions"
)

// TestCompactionKeepsACacheablePrefix: in steps, a summary_buffer session
// compacts past 80% of what its budget leaves for history, down to 20%,
// but never so far that the request after the compaction (what comes
// before the history, the summary, what stays verbatim) is under the
// provider's cacheable prefix, unless that would keep more than 30%; trim
// "each" compacts past 60% down to 30%, as before.
func TestCompactionKeepsACacheablePrefix(t *testing.T) {
	for _, tc := range []struct {
		name             string
		trim             sessions.Trim
		budget, fixed    int
		summary          int // tokens of the previous summary (0: none)
		messages         int // of 100 tokens each
		due              bool
		keepMin, keepMax int // verbatim tokens after the compaction
	}{
		// 4,000: 20% is 796, under the cacheable prefix: it keeps 1,152
		// less what comes before the history, in whole messages.
		{"4,000, first summary", "", 4000, 13, 0, 32, true, 1000, 1136},
		{"4,000, with a summary", "", 4000, 13, 250, 30, true, 800, 886},
		{"4,000, not yet at 80%", "", 4000, 13, 0, 31, false, 0, 0},
		// 16,000: 20% is over the cacheable prefix.
		{"16,000", "", 16000, 13, 250, 126, true, 3000, 3146},
		// 2,000: the floor would keep more than 30%.
		{"2,000", "", 2000, 13, 0, 16, true, 500, 595},
		{"4,000, each", sessions.TrimEach, 4000, 13, 0, 24, true, 1100, 1195},
		{"4,000, each, under 60%", sessions.TrimEach, 4000, 13, 0, 23, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []Message
			for i := range tc.messages {
				h = append(h, msg([]Role{RoleUser, RoleAssistant}[i%2], 100))
			}
			h = seqd(h...)
			s := session(sessions.StrategySummaryBuffer, 0, len(h))
			s.Context.Trim = tc.trim
			tl := &Tail{Messages: h}
			if tc.summary > 0 {
				tl.Compaction = &Compaction{EndSeq: -1, Tokens: tc.summary}
			}
			p, ok := PlanCompaction(s, tl, tc.budget, tc.fixed)
			if ok != tc.due {
				t.Fatalf("due %v (%+v), want %v", ok, p, tc.due)
			}
			if !ok {
				return
			}
			kept := tokensOf(after(h, p.EndSeq))
			if kept < tc.keepMin || kept > tc.keepMax {
				t.Errorf("%d tokens stay verbatim, want %d to %d", kept, tc.keepMin, tc.keepMax)
			}
		})
	}
}
