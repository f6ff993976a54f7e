package history

import (
	"fmt"
	"strconv"

	"github.com/chatmemory/backend/sessions"
)

// Pruned is a tool result a context shows the model as a stub.
type Pruned struct {
	Seq        int    `json:"seq"`
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name,omitempty"` // the function called
	Tokens     int    `json:"tokens"`         // of the result as stored
}

// pruneToolOutputs returns msgs (oldest first) with the tool results st
// prunes replaced by stubs, and what it pruned. Tool exchanges are counted
// from the newest (an assistant message with tool calls and its results);
// a result is pruned when its exchange is older than the KeepLast newest,
// or it holds more than MaxTokens tokens, but never in the newest
// exchange. A stub keeps the result's role and call id, so the exchange
// stays valid for every OpenAI-compatible model; its tokens are counted
// as its bytes and the message's own overhead, never fewer than a
// tokenizer would count. msgs is not changed.
func pruneToolOutputs(msgs []Message, st sessions.ToolOutputs) ([]Message, []Pruned) {
	if st.KeepLast == 0 && st.MaxTokens == 0 {
		return msgs, nil
	}
	// Each call's name, and how many tool exchanges there are.
	names := map[string]string{}
	total := 0
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 {
			total++
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
			}
		}
	}
	// The exchange each result belongs to, counted from the newest (0): the
	// one whose call came last before it. -1 for anything else.
	rank := make([]int, len(msgs))
	seen := 0
	for i, m := range msgs {
		rank[i] = -1
		if len(m.ToolCalls) > 0 {
			seen++
		}
		if m.Role == RoleTool && seen > 0 {
			rank[i] = total - seen
		}
	}
	var out []Message
	var pruned []Pruned
	for i, m := range msgs {
		r := rank[i]
		if m.Role != RoleTool || r <= 0 || !((st.KeepLast > 0 && r >= st.KeepLast) || (st.MaxTokens > 0 && m.Tokens > st.MaxTokens)) {
			continue
		}
		if out == nil {
			out = append([]Message(nil), msgs...)
		}
		name := names[m.ToolCallID]
		stub := fmt.Sprintf("[tool output pruned: %s tokens; call %s]", commas(m.Tokens), name)
		if name == "" {
			stub = fmt.Sprintf("[tool output pruned: %s tokens]", commas(m.Tokens))
		}
		tokens := min(m.Tokens, len(stub)+len(m.ToolCallID)+tokensPerMessage+tokensPerTool)
		out[i].Content, out[i].Tokens = stub, tokens
		pruned = append(pruned, Pruned{Seq: m.Seq, ToolCallID: m.ToolCallID, Name: name, Tokens: m.Tokens})
	}
	if out == nil {
		return msgs, nil
	}
	return out, pruned
}

// commas writes n with thousands separators.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
