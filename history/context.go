package history

import "strings"

// Known context windows, in tokens. A model not listed gets DefaultWindow;
// names match by prefix, longest first.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-4-32k", 32_768},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"gpt-5", 400_000},
	{"o1", 200_000},
	{"o3", 200_000},
	{"o4", 200_000},
}

// DefaultWindow is the context window assumed for an unknown model.
const DefaultWindow = 8_192

// ContextWindow returns the context window of model in tokens.
func ContextWindow(model string) int {
	m := strings.ToLower(model)
	best, n := 0, DefaultWindow
	for _, w := range contextWindows {
		if strings.HasPrefix(m, w.prefix) && len(w.prefix) > best {
			best, n = len(w.prefix), w.tokens
		}
	}
	return n
}

// unit is a run of messages that must be sent together or not at all: an
// assistant message with tool calls and all of its results, or one other
// message.
type unit struct {
	msgs   []Message
	tokens int
}

// units groups msgs (oldest first) into units, leaving out what cannot be
// sent: tool results whose call is not in msgs, and assistant tool calls
// whose results are not all in msgs.
func units(msgs []Message) []unit {
	var out []unit
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == RoleTool:
			continue // its call is not here (it was before the window)
		case len(m.ToolCalls) == 0:
			out = append(out, unit{msgs: msgs[i : i+1], tokens: m.Tokens})
			continue
		}
		want := map[string]bool{}
		for _, c := range m.ToolCalls {
			want[c.ID] = true
		}
		j, tokens := i+1, m.Tokens
		for ; j < len(msgs) && msgs[j].Role == RoleTool && want[msgs[j].ToolCallID]; j++ {
			delete(want, msgs[j].ToolCallID)
			tokens += msgs[j].Tokens
		}
		if len(want) == 0 {
			out = append(out, unit{msgs: msgs[i:j], tokens: tokens})
		}
		i = j - 1
	}
	return out
}

// FitBudget returns the most recent whole units of msgs (oldest first) whose
// tokens sum to at most budget, oldest first. Tool exchanges stay whole.
func FitBudget(msgs []Message, budget int) []Message {
	us := units(msgs)
	start, used := len(us), 0
	for start > 0 && used+us[start-1].tokens <= budget {
		start--
		used += us[start].tokens
	}
	var out []Message
	for _, u := range us[start:] {
		out = append(out, u.msgs...)
	}
	return out
}
