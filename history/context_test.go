package history

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

func msg(role Role, tokens int) Message { return Message{Role: role, Tokens: tokens} }

func calls(tokens int, ids ...string) Message {
	m := Message{Role: RoleAssistant, Tokens: tokens}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: "f"}})
	}
	return m
}

func result(id string, tokens int) Message {
	return Message{Role: RoleTool, ToolCallID: id, Tokens: tokens}
}

// describe renders messages compactly: u, a, A(c1,c2) for calls, t:c1.
func describe(msgs []Message) string {
	var parts []string
	for _, m := range msgs {
		switch {
		case m.Role == RoleTool:
			parts = append(parts, "t:"+m.ToolCallID)
		case len(m.ToolCalls) > 0:
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			parts = append(parts, "A("+strings.Join(ids, ",")+")")
		default:
			parts = append(parts, string(m.Role[:1]))
		}
	}
	return strings.Join(parts, " ")
}

func TestFitBudget(t *testing.T) {
	exchange := []Message{msg(RoleUser, 10), calls(5, "c1", "c2"), result("c1", 5), result("c2", 5), msg(RoleAssistant, 10)}
	cases := []struct {
		name   string
		msgs   []Message
		budget int
		want   string
	}{
		{"Empty", nil, 100, ""},
		{"AllFit", []Message{msg(RoleUser, 10), msg(RoleAssistant, 10)}, 20, "u a"},
		{"ExactBoundary", []Message{msg(RoleUser, 10), msg(RoleAssistant, 10), msg(RoleUser, 10)}, 20, "a u"},
		{"OneUnder", []Message{msg(RoleUser, 10), msg(RoleAssistant, 10), msg(RoleUser, 10)}, 19, "u"},
		{"NothingFits", []Message{msg(RoleUser, 10)}, 9, ""},
		{"ExchangeWhole", exchange, 35, "u A(c1,c2) t:c1 t:c2 a"},
		{"ExchangeNotSplit", exchange, 24, "a"},
		{"ExchangeJustFits", exchange, 25, "A(c1,c2) t:c1 t:c2 a"},
		{"OrphanResultsDropped", []Message{result("c0", 5), msg(RoleUser, 5)}, 100, "u"},
		{"IncompleteCallDropped", []Message{msg(RoleUser, 5), calls(5, "c1", "c2"), result("c1", 5)}, 100, "u"},
		{"AbandonedCallDropped", []Message{calls(5, "c1"), msg(RoleUser, 5), msg(RoleAssistant, 5)}, 100, "u a"},
		{"ResultsOutOfOrder", []Message{calls(5, "c1", "c2"), result("c2", 5), result("c1", 5)}, 100, "A(c1,c2) t:c2 t:c1"},
		{"SecondExchangeFits", []Message{calls(5, "c1"), result("c1", 5), calls(5, "c2"), result("c2", 5)}, 10, "A(c2) t:c2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(FitBudget(c.msgs, c.budget)); got != c.want {
				t.Errorf("FitBudget(%s, %d) = %q, want %q", describe(c.msgs), c.budget, got, c.want)
			}
		})
	}
}

// randomHistory builds a plausible stored history: user and assistant
// turns, tool exchanges (sometimes abandoned or partly answered).
func randomHistory(r *rand.Rand, n int) []Message {
	var out []Message
	next := 0
	for len(out) < n {
		switch r.IntN(4) {
		case 0, 1:
			out = append(out, msg([]Role{RoleUser, RoleAssistant, RoleSystem}[r.IntN(3)], 1+r.IntN(50)))
		default:
			k := 1 + r.IntN(3)
			var ids []string
			for i := 0; i < k; i++ {
				next++
				ids = append(ids, fmt.Sprint("c", next))
			}
			out = append(out, calls(1+r.IntN(20), ids...))
			answered := k
			if r.IntN(5) == 0 {
				answered = r.IntN(k) // abandoned or partly answered
			}
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			for _, id := range ids[:answered] {
				out = append(out, result(id, 1+r.IntN(30)))
			}
		}
	}
	return out
}

// valid reports whether msgs can be sent to an OpenAI-style API: every tool
// result follows its call, and every call has all of its results.
func valid(msgs []Message) error {
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == RoleTool {
			return fmt.Errorf("tool result %s at %d without its call", m.ToolCallID, i)
		}
		if len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range m.ToolCalls {
			want[c.ID] = true
		}
		for i+1 < len(msgs) && msgs[i+1].Role == RoleTool {
			i++
			if !want[msgs[i].ToolCallID] {
				return fmt.Errorf("tool result %s answers another call", msgs[i].ToolCallID)
			}
			delete(want, msgs[i].ToolCallID)
		}
		if len(want) > 0 {
			return fmt.Errorf("call at %d misses %d results", i, len(want))
		}
	}
	return nil
}

// TestFitBudgetProperties: over random histories and budgets, every context
// is valid, within budget, a suffix of the history's sendable part, and as
// long as the budget allows.
func TestFitBudgetProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		h := randomHistory(r, r.IntN(40))
		budget := r.IntN(400)
		got := FitBudget(h, budget)
		if err := valid(got); err != nil {
			t.Fatalf("history %s, budget %d: %v\ngot %s", describe(h), budget, err, describe(got))
		}
		sum := 0
		for _, m := range got {
			sum += m.Tokens
		}
		if sum > budget {
			t.Fatalf("history %s, budget %d: %d tokens", describe(h), budget, sum)
		}
		// Maximal: the next older sendable bundle would not have fit.
		us := bundles(h)
		if k := len(us) - countBundles(got); k > 0 && sum+us[k-1].tokens <= budget {
			t.Fatalf("history %s, budget %d: stopped early at %d tokens", describe(h), budget, sum)
		}
	}
}

func countBundles(msgs []Message) int { return len(bundles(msgs)) }

func TestContextWindow(t *testing.T) {
	for model, want := range map[string]int{
		"gpt-4o-mini": 128_000, "gpt-4o": 128_000, "gpt-4": 8_192, "gpt-4-turbo-2024": 128_000,
		"gpt-4.1-mini": 1_047_576, "gpt-3.5-turbo": 16_385, "some-local-model": DefaultContextSize,
	} {
		if got := ContextSize(model); got != want {
			t.Errorf("ContextSize(%q) = %d, want %d", model, got, want)
		}
	}
}

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
	return &sessions.Session{Context: sessions.ContextSettings{Strategy: strategy, WindowExchanges: window}, NextSeq: next}
}

// trimEach is s trimming one exchange at a time.
func trimEach(s *sessions.Session) *sessions.Session {
	s.Context.Trim = sessions.TrimEach
	return s
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
		{"WindowTwo", trimEach(session(sessions.StrategyWindow, 2, 7)), &Tail{Messages: h}, 1000, "2 3 4 5 6", false, false, 50},
		{"WindowTwoInSteps", session(sessions.StrategyWindow, 2, 7), &Tail{Messages: h}, 1000, "0 1 2 3 4 5 6", false, false, 70}, // 3 exchanges: between 2 and 4
		{"WindowOne", trimEach(session(sessions.StrategyWindow, 1, 7)), &Tail{Messages: h}, 1000, "6", false, false, 10},
		{"WindowOneInSteps", session(sessions.StrategyWindow, 1, 7), &Tail{Messages: h}, 1000, "6", false, false, 10}, // marks every 4 seqs: 6 is the first exchange from 4
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
			if s.Context.Strategy != sessions.StrategyBuffer {
				t.Fatalf("%s refused: %v", s.Context.Strategy, err)
			}
			continue
		}
		if err := valid(c.Messages); err != nil {
			t.Fatalf("%s, budget %d, history %s: %v\ncontext %s", s.Context.Strategy, budget, describe(h), err, describe(c.Messages))
		}
		if c.Tokens > budget && len(c.Messages) > 0 {
			t.Fatalf("%s: %d tokens over budget %d", s.Context.Strategy, c.Tokens, budget)
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
	// In steps (the default), a compaction is due past 80%, and leaves
	// 20% verbatim, but here (a budget far under the provider's cacheable
	// prefix) 30%; TestCompactionKeepsACacheablePrefix has the rest.
	if p, ok := PlanCompaction(s, &Tail{Messages: h[:8]}, budget, 0); ok {
		t.Errorf("80 tokens, in steps: plan %+v, want none", p)
	}
	if p, ok := PlanCompaction(s, &Tail{Messages: h[:9]}, budget, 0); !ok || p.StartSeq != 0 || p.EndSeq != 5 {
		t.Errorf("90 tokens, in steps: plan %+v %v, want 0..5 (30 stay verbatim)", p, ok)
	}
	s.Context.Trim = sessions.TrimEach // the rest: compactions half as deep
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
	// Many short messages fill a tail's bytes long before a large budget's
	// tokens: a summary is due before they would leave it unsummarized.
	var short []Message
	text := strings.Repeat("x", 400)
	for len(short) == 0 || bytesOf(short) <= MaxTailBytes*compactAbovePct/100 {
		short = append(short, Message{Role: []Role{RoleUser, RoleAssistant}[len(short)%2], Content: text, Tokens: 5})
	}
	short = seqd(short...)
	big := 100_000
	if _, ok := PlanCompaction(s, &Tail{Messages: short[:len(short)-2]}, big, 0); ok {
		t.Errorf("under 60%% of the tail's bytes and of the budget: nothing is due")
	}
	p, ok = PlanCompaction(s, &Tail{Messages: short}, big, 0)
	if !ok || p.StartSeq != 0 || bytesOf(short[p.EndSeq+1:]) > MaxTailBytes*keepBelowPct/100 || bytesOf(short[p.EndSeq:]) <= MaxTailBytes*keepBelowPct/100 {
		t.Errorf("by bytes: %+v %v (of %d messages)", p, ok, len(short))
	}
}

// TestTrimInSteps: window and token_buffer drop old messages in steps,
// so that the first message sent stays the same over the turns between
// steps (the provider's prompt cache serves the start of the request),
// always within the window and the budget; trim "each" drops one
// exchange a turn.
func TestTrimInSteps(t *testing.T) {
	var h []Message
	for i := 0; i < 80; i++ {
		h = append(h, msg([]Role{RoleUser, RoleAssistant}[i%2], 10))
	}
	h = seqd(h...)
	for _, tc := range []struct {
		strategy sessions.Strategy
		trim     sessions.Trim
		budget   int
		changes  int // how often the first message sent changes over 40 exchanges (the first time included)
		max      int // messages sent at most
	}{
		{sessions.StrategyWindow, "", 1000, 5, 2 * 2 * 10},
		{sessions.StrategyWindow, sessions.TrimEach, 1000, 31, 20},
		{sessions.StrategyTokenBuffer, "", 200, 11, 20},
		{sessions.StrategyTokenBuffer, sessions.TrimEach, 200, 61, 20},
	} {
		s := session(tc.strategy, 10, 0)
		s.Context.Trim = tc.trim
		first, changes := -1, 0
		for n := 2; n <= len(h); n++ {
			c, err := Build(s, &Tail{Messages: h[:n]}, tc.budget+ReplyPriming, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Messages) > tc.max || c.Tokens > tc.budget+ReplyPriming || c.Messages[len(c.Messages)-1].Seq != n-1 {
				t.Fatalf("%s %q at %d: %d messages, %d tokens", tc.strategy, tc.trim, n, len(c.Messages), c.Tokens)
			}
			if c.Messages[0].Seq != first {
				first, changes = c.Messages[0].Seq, changes+1
			}
		}
		if changes > tc.changes {
			t.Errorf("%s %q: the first message changed %d times, want at most %d", tc.strategy, tc.trim, changes, tc.changes)
		}
		t.Logf("%s %q: the first message changed %d times over %d messages", tc.strategy, tc.trim, changes, len(h))
	}
}
