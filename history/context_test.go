package history

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
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
		// Maximal: the next older sendable unit would not have fit.
		us := units(h)
		if k := len(us) - countUnits(got); k > 0 && sum+us[k-1].tokens <= budget {
			t.Fatalf("history %s, budget %d: stopped early at %d tokens", describe(h), budget, sum)
		}
	}
}

func countUnits(msgs []Message) int { return len(units(msgs)) }

func TestContextWindow(t *testing.T) {
	for model, want := range map[string]int{
		"gpt-4o-mini": 128_000, "gpt-4o": 128_000, "gpt-4": 8_192, "gpt-4-turbo-2024": 128_000,
		"gpt-4.1-mini": 1_047_576, "gpt-3.5-turbo": 16_385, "some-local-model": DefaultWindow,
	} {
		if got := ContextWindow(model); got != want {
			t.Errorf("ContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
}
