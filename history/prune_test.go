package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chatmemory/backend/sessions"
)

// toolSession is a conversation of n tool exchanges: a question, a call,
// its result of the given tokens, an answer.
func toolSession(n int, resultTokens func(i int) int) []Message {
	var msgs []Message
	seq := 0
	add := func(m Message) {
		m.Seq, m.ParentSeq = seq, seq-1
		seq++
		msgs = append(msgs, m)
	}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		add(Message{Role: RoleUser, Content: "look it up", Tokens: 5})
		add(Message{Role: RoleAssistant, Tokens: 20, ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "search_web", Arguments: "{}"}}}})
		add(Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("result ", resultTokens(i)), Tokens: resultTokens(i)})
		add(Message{Role: RoleAssistant, Content: "found it", Tokens: 5})
	}
	return msgs
}

// TestPruneToolOutputs: results older than the keepLast newest tool
// exchanges, and longer than maxTokens, become stubs naming the call,
// never in the newest exchange; 0 turns a rule off; the input is not
// changed; a stub never counts fewer tokens than a tokenizer would.
func TestPruneToolOutputs(t *testing.T) {
	tok, err := NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		n          int
		size       func(int) int
		st         sessions.ToolOutputs
		wantPruned []int // exchanges (oldest 0) whose result is a stub
	}{
		{"off", 6, func(int) int { return 5000 }, sessions.ToolOutputs{}, nil},
		{"by age", 6, func(int) int { return 100 }, sessions.ToolOutputs{KeepLast: 3}, []int{0, 1, 2}},
		{"by size, the newest kept", 4, func(i int) int { return []int{100, 3000, 100, 5000}[i] }, sessions.ToolOutputs{MaxTokens: 2000}, []int{1}},
		{"both", 5, func(i int) int { return []int{100, 100, 3000, 100, 100}[i] }, sessions.ToolOutputs{KeepLast: 4, MaxTokens: 2000}, []int{0, 2}},
		{"fewer exchanges than kept", 2, func(int) int { return 100 }, sessions.ToolOutputs{KeepLast: 3, MaxTokens: 2000}, nil},
		{"only the newest: never", 1, func(int) int { return 9000 }, sessions.ToolOutputs{KeepLast: 1, MaxTokens: 10}, nil},
	} {
		msgs := toolSession(tc.n, tc.size)
		before := fmt.Sprint(msgs)
		got, pruned := pruneToolOutputs(msgs, tc.st)
		if fmt.Sprint(msgs) != before {
			t.Fatalf("%s: the input changed", tc.name)
		}
		var exchanges []int
		for _, p := range pruned {
			exchanges = append(exchanges, p.Seq/4)
			m := got[p.Seq]
			want := fmt.Sprintf("[tool output pruned: %s tokens; call search_web]", commas(tc.size(p.Seq/4)))
			if m.Content != want || m.Role != RoleTool || m.ToolCallID != fmt.Sprintf("call_%d", p.Seq/4) || p.Name != "search_web" || p.Tokens != tc.size(p.Seq/4) {
				t.Errorf("%s: stub %+v for %+v", tc.name, m, p)
			}
			if counted := tok.Count("gpt-4o", &m); m.Tokens < counted || m.Tokens >= p.Tokens {
				t.Errorf("%s: a stub of %d tokens (the tokenizer counts %d, the result had %d)", tc.name, m.Tokens, counted, p.Tokens)
			}
		}
		if fmt.Sprint(exchanges) != fmt.Sprint(tc.wantPruned) && !(len(exchanges) == 0 && len(tc.wantPruned) == 0) {
			t.Errorf("%s: pruned exchanges %v, want %v", tc.name, exchanges, tc.wantPruned)
		}
		if len(pruned) == 0 && &got[0] != &msgs[0] {
			t.Errorf("%s: nothing pruned, yet copied", tc.name)
		}
	}
	if commas(1840) != "1,840" || commas(12) != "12" || commas(1234567) != "1,234,567" {
		t.Error("commas")
	}
}

// TestPruningComesBeforeSummaries: under summary_buffer, a session whose
// tool results overflow the budget keeps more messages verbatim once its
// old results are stubs, and needs no summary where it otherwise would;
// under every strategy the context says what it pruned.
func TestPruningComesBeforeSummaries(t *testing.T) {
	msgs := toolSession(8, func(int) int { return 600 })
	tail := &Tail{Messages: msgs}
	s := &sessions.Session{NextSeq: len(msgs), Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer}}
	off := *s
	off.Context.ToolOutputs = &sessions.ToolOutputs{}
	budget := 5000
	if _, due := PlanCompaction(&off, tail, budget, 100); !due {
		t.Fatal("without pruning, a summary should be due")
	}
	if p, due := PlanCompaction(s, tail, budget, 100); due {
		t.Fatalf("with pruning, a summary is planned: %+v", p)
	}
	for _, st := range []sessions.Strategy{sessions.StrategySummaryBuffer, sessions.StrategyTokenBuffer, sessions.StrategyWindow} {
		s.Context.Strategy = st
		c, err := Build(s, tail, budget, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Pruned) == 0 || c.Tokens > budget {
			t.Errorf("%s: %d pruned, %d tokens of %d", st, len(c.Pruned), c.Tokens, budget)
		}
		for _, p := range c.Pruned {
			found := false
			for _, m := range c.Messages {
				found = found || (m.Seq == p.Seq && strings.HasPrefix(m.Content, "[tool output pruned"))
			}
			if !found {
				t.Errorf("%s: pruned %+v is not a stub among the messages sent", st, p)
			}
		}
	}
}
