package history

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// seqd numbers msgs from seq 0, as stored.
func seqd(msgs ...Message) []Message {
	for i := range msgs {
		msgs[i].Seq = i
	}
	return msgs
}

func seqs(msgs []Message) string {
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprint(m.Seq)
	}
	return out
}

func session(strategy sessions.Strategy, window int, next int) *sessions.Session {
	return &sessions.Session{Memory: sessions.Memory{Strategy: strategy, WindowExchanges: window}, NextSeq: next}
}

func TestBuildStrategies(t *testing.T) {
	// Six messages of 10 tokens: three exchanges (u a) (u A t a)... kept simple.
	h := seqd(msg(RoleUser, 10), msg(RoleAssistant, 10), msg(RoleUser, 10), calls(10, "c1"), result("c1", 10), msg(RoleAssistant, 10), msg(RoleUser, 10))
	const fixed = 7 // system prompt
	base := fixed + ReplyPriming
	cases := []struct {
		name     string
		s        *sessions.Session
		tail     *Tail
		budget   int
		want     string
		refused  bool
		summary  bool
		tokensIn int
	}{
		{"BufferAll", session(sessions.StrategyBuffer, 0, 7), &Tail{Messages: h}, base + 70, "0 1 2 3 4 5 6", false, false, 70},
		{"BufferOneShort", session(sessions.StrategyBuffer, 0, 7), &Tail{Messages: h}, base + 69, "", true, false, 0},
		{"BufferIncompleteTail", session(sessions.StrategyBuffer, 0, 8), &Tail{Messages: seqd(h...)[1:]}, 1000, "", true, false, 0},
		{"WindowTwo", session(sessions.StrategyWindow, 2, 7), &Tail{Messages: h}, 1000, "2 3 4 5 6", false, false, 50},
		{"WindowOne", session(sessions.StrategyWindow, 1, 7), &Tail{Messages: h}, 1000, "6", false, false, 10},
		{"WindowCutByBudget", session(sessions.StrategyWindow, 3, 7), &Tail{Messages: h}, base + 45, "3 4 5 6", false, false, 40},
		{"TokenBufferExact", session(sessions.StrategyTokenBuffer, 0, 7), &Tail{Messages: h}, base + 50, "2 3 4 5 6", false, false, 50},
		{"TokenBufferOneShort", session(sessions.StrategyTokenBuffer, 0, 7), &Tail{Messages: h}, base + 49, "3 4 5 6", false, false, 40},
		{"TokenBufferKeepsExchangeWhole", session(sessions.StrategyTokenBuffer, 0, 7), &Tail{Messages: h}, base + 39, "5 6", false, false, 20},
		{"SummaryNone", session(sessions.StrategySummaryBuffer, 0, 7), &Tail{Messages: h}, base + 30, "5 6", false, false, 20},
		{"SummaryUsed", session(sessions.StrategySummaryBuffer, 0, 7),
			&Tail{Messages: h, Compaction: &Compaction{EndSeq: 1, Tokens: 15}}, base + 15 + 50, "2 3 4 5 6", false, true, 65},
		{"SummaryBudgetTight", session(sessions.StrategySummaryBuffer, 0, 7),
			&Tail{Messages: h, Compaction: &Compaction{EndSeq: 1, Tokens: 15}}, base + 15 + 39, "5 6", false, true, 35},
		{"SummaryTooBigIsSkipped", session(sessions.StrategySummaryBuffer, 0, 7),
			&Tail{Messages: h, Compaction: &Compaction{EndSeq: 1, Tokens: 500}}, base + 30, "5 6", false, false, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Build(c.s, c.tail, c.budget, fixed)
			if c.refused {
				if errs.CodeOf(err) != errs.EPRECONDITION {
					t.Fatalf("want refusal, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if seqs(got.Messages) != c.want || (got.Compaction != nil) != c.summary {
				t.Errorf("got %q (summary %v), want %q (summary %v)", seqs(got.Messages), got.Compaction != nil, c.want, c.summary)
			}
			if got.Tokens != base+c.tokensIn || got.Tokens > c.budget {
				t.Errorf("tokens %d, want %d within budget %d", got.Tokens, base+c.tokensIn, c.budget)
			}
		})
	}
}

func TestTailAdd(t *testing.T) {
	var tl Tail
	tl.add(seqd(msg(RoleUser, 10), calls(10, "c1"), result("c1", 10), msg(RoleAssistant, 10)), 25)
	// Dropping the call drops its result with it.
	if got := seqs(tl.Messages); got != "3" {
		t.Errorf("tail %q", got)
	}
	tl = Tail{}
	tl.add(seqd(msg(RoleUser, 10), msg(RoleAssistant, 10)), 20)
	if got := seqs(tl.Messages); got != "0 1" {
		t.Errorf("exact fit: %q", got)
	}
	// The newest message stays even when it alone is over the budget.
	tl = Tail{}
	tl.add(seqd(msg(RoleUser, 100)), 20)
	if len(tl.Messages) != 1 {
		t.Errorf("lost the newest message")
	}
	// The byte cap binds too.
	tl = Tail{}
	big := make([]Message, 30)
	for i := range big {
		big[i] = Message{Role: RoleUser, Tokens: 1, Content: string(make([]byte, 32<<10))}
	}
	tl.add(seqd(big...), 1<<30)
	if b := 0; true {
		for i := range tl.Messages {
			b += StoredBytes(&tl.Messages[i])
		}
		if b > MaxTailBytes || len(tl.Messages) == 30 {
			t.Errorf("tail holds %d bytes in %d messages", b, len(tl.Messages))
		}
	}
}

func TestPlanCompaction(t *testing.T) {
	// Ten 10-token messages; history budget 100 (budget 100+fixed+priming).
	var h []Message
	for i := 0; i < 10; i++ {
		h = append(h, msg([]Role{RoleUser, RoleAssistant}[i%2], 10))
	}
	h = seqd(h...)
	s := session(sessions.StrategySummaryBuffer, 0, 10)
	budget := 100 + ReplyPriming
	if _, ok := PlanCompaction(s, &Tail{Messages: h[:6]}, budget, 0); ok {
		t.Errorf("60 of 100 tokens is not over the threshold")
	}
	p, ok := PlanCompaction(s, &Tail{Messages: h[:7]}, budget, 0)
	if !ok || p.StartSeq != 0 || p.EndSeq != 3 || p.Previous != nil {
		t.Errorf("70 tokens: plan %+v %v, want 0..3 (30 stay verbatim)", p, ok)
	}
	// With a 10-token summary, 90 tokens are left: 60 verbatim is over 54,
	// and compacting stops once at most 27 stay verbatim.
	prev := &Compaction{EndSeq: 3, Tokens: 10}
	p, ok = PlanCompaction(s, &Tail{Messages: h[4:], Compaction: prev}, budget, 0)
	if !ok || p.StartSeq != 4 || p.EndSeq != 7 || p.Previous != prev {
		t.Errorf("incremental: %+v %v, want 4..7 after the previous summary", p, ok)
	}
	if p, ok := PlanCompaction(s, &Tail{Messages: h[4:], Compaction: prev}, budget+20, 0); ok {
		t.Errorf("60 of 110 tokens is under the threshold: %+v", p)
	}
	if _, ok := PlanCompaction(session(sessions.StrategyTokenBuffer, 0, 10), &Tail{Messages: h}, budget, 0); ok {
		t.Errorf("only summary_buffer sessions compact")
	}
	// A tail that starts after a gap: the range starts right after the
	// previous summary and is capped.
	long := make([]Message, 0, 600)
	for i := 0; i < 600; i++ {
		long = append(long, msg(RoleUser, 1))
	}
	long = seqd(long...)
	p, ok = PlanCompaction(s, &Tail{Messages: long[500:], Compaction: &Compaction{EndSeq: 9}}, 60+ReplyPriming, 0)
	if !ok || p.StartSeq != 10 || p.EndSeq != 10+MaxCompactMessages-1 {
		t.Errorf("gap: %+v %v", p, ok)
	}
}

// TestBuildProperties: any strategy, any history, any budget: the context
// keeps tool exchanges whole and stays within the budget.
func TestBuildProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	strategies := []sessions.Strategy{sessions.StrategyBuffer, sessions.StrategyWindow, sessions.StrategyTokenBuffer, sessions.StrategySummaryBuffer}
	for i := 0; i < 4000; i++ {
		h := seqd(randomHistory(r, r.IntN(60))...)
		budget := 20 + r.IntN(600)
		fixed := r.IntN(20)
		s := session(strategies[r.IntN(4)], 1+r.IntN(5), len(h))
		var tl Tail
		tl.add(h, budget)
		if r.IntN(2) == 0 && len(tl.Messages) > 2 {
			end := tl.Messages[r.IntN(len(tl.Messages)-1)].Seq
			tl.Compaction = &Compaction{EndSeq: end, Tokens: 1 + r.IntN(100)}
		}
		c, err := Build(s, &tl, budget, fixed)
		if err != nil {
			if s.Memory.Strategy != sessions.StrategyBuffer {
				t.Fatalf("%s refused: %v", s.Memory.Strategy, err)
			}
			continue
		}
		if err := valid(c.Messages); err != nil {
			t.Fatalf("%s, budget %d, history %s: %v\ncontext %s", s.Memory.Strategy, budget, describe(h), err, describe(c.Messages))
		}
		if c.Tokens > budget && len(c.Messages) > 0 {
			t.Fatalf("%s: %d tokens over budget %d", s.Memory.Strategy, c.Tokens, budget)
		}
	}
}
