package history

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// BudgetFor returns the context budget of s in tokens, never more than
// the context size of its model.
func (svc *Service) BudgetFor(s *sessions.Session) int {
	size := ContextSize(s.Model)
	if svc.ContextSize != nil {
		size = svc.ContextSize(s.Model)
	}
	switch {
	case s.Context.BudgetTokens > 0:
		return min(s.Context.BudgetTokens, size)
	case svc.DefaultBudget > 0:
		return min(svc.DefaultBudget, size)
	}
	return size * 3 / 4
}

// Known context sizes, in tokens. A model not listed gets DefaultContextSize;
// names match by prefix, longest first.
var contextSizes = []struct {
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

// DefaultContextSize is the context size assumed for an unknown model.
const DefaultContextSize = 8_192

// ContextSize returns the context size of model (its context window) in tokens.
func ContextSize(model string) int {
	m := strings.ToLower(model)
	best, n := 0, DefaultContextSize
	for _, w := range contextSizes {
		if strings.HasPrefix(m, w.prefix) && len(w.prefix) > best {
			best, n = len(w.prefix), w.tokens
		}
	}
	return n
}

// Context is what a turn sends the model, besides its system prompt.
type Context struct {
	Strategy   sessions.Strategy `json:"strategy"`
	Budget     int               `json:"budget"`
	Tokens     int               `json:"tokens"` // system prompt, summary, messages and reply priming
	Compaction *Compaction       `json:"compaction"`
	Messages   []Message         `json:"-"` // history, oldest first: verbatim but for pruned tool results
	// Pruned are the tool results among Messages shown as stubs.
	Pruned []Pruned `json:"pruned,omitempty"`
}

// SummaryMessage is the system message that carries c into a context.
func SummaryMessage(c *Compaction) Message {
	return Message{Role: RoleSystem, Content: prompts.SummaryMessage(c.EndSeq, c.Summary)}
}

// Build chooses the history the model sees under mem, within budget tokens
// of which fixed (the system prompt) are taken already. Every context it
// returns keeps tool exchanges whole and stays within budget.
func Build(s *sessions.Session, t *Tail, budget, fixed int) (*Context, error) {
	mem := s.Context
	// What the strategies ask of the session, asked once.
	complete, windowStep := t.Complete(s), mem.WindowStep(mem.WindowExchanges)
	c := &Context{Strategy: mem.Strategy, Budget: budget}
	avail := budget - fixed - ReplyPriming
	msgs, pruned := pruneToolOutputs(t.Messages, mem.ToolLimits()) // before anything else: pruning comes before summaries
	msgs = keepImages(msgs, ImageTurns)
	switch mem.Strategy {
	case sessions.StrategyBuffer:
		all := FitBudget(msgs, 1<<62)
		if !complete || tokensOf(all) > avail {
			return nil, errs.Errorf(errs.EPRECONDITION,
				"the whole history no longer fits the model's context budget of %d tokens: switch this session to another context strategy", budget)
		}
		c.Messages = all
	case sessions.StrategyWindow:
		c.Messages = FitBudget(windowInSteps(msgs, mem.WindowExchanges, windowStep), avail)
	case sessions.StrategyTokenBuffer:
		c.Messages = fitInSteps(msgs, complete, avail, stepMessages(s, msgs, float64(avail)*mem.BudgetStep()))
	default: // summary_buffer
		verbatim := msgs
		if cp := t.Compaction; cp != nil && cp.Tokens < avail {
			c.Compaction = cp
			avail -= cp.Tokens
			verbatim = keepImages(after(t.Messages, cp.EndSeq), ImageTurns)
		}
		c.Messages = FitBudget(verbatim, avail)
	}
	if len(pruned) > 0 {
		sent := map[int]bool{}
		for _, m := range c.Messages {
			sent[m.Seq] = true
		}
		for _, p := range pruned {
			if sent[p.Seq] {
				c.Pruned = append(c.Pruned, p)
			}
		}
	}
	c.Tokens = fixed + ReplyPriming + tokensOf(c.Messages)
	if c.Compaction != nil {
		c.Tokens += c.Compaction.Tokens
	}
	return c, nil
}

// windowInSteps returns the last exchanges from a start that moves step
// exchanges at a time: about k to k+step-1 of them, the same first one
// from turn to turn until the window passes the next mark. The marks are
// message numbers (every 2*step seqs, an exchange being a user message and
// a reply), not positions in msgs, so they hold while the stored tail
// that msgs comes from is trimmed at its start.
func windowInSteps(msgs []Message, k, step int) []Message {
	var starts []int
	for i, m := range msgs {
		if m.Role == RoleUser {
			starts = append(starts, i)
		}
	}
	if k <= 0 || len(starts) <= k {
		return msgs
	}
	first := starts[len(starts)-k] // the window's own start
	if step <= 1 {
		return msgs[first:]
	}
	mark := msgs[first].Seq / (2 * step) * (2 * step)
	for _, i := range starts {
		if msgs[i].Seq >= mark {
			return msgs[i:]
		}
	}
	return msgs[first:]
}

// stepMessages is how many messages make a step of about tokens: the
// session's mean message size (the tail's while the session counts none)
// divides it, rounded down to a power of two or three times one (1, 2, 3,
// 4, 6, 8, 12, ...) so that it holds as the mean drifts. 0: no steps.
func stepMessages(s *sessions.Session, msgs []Message, tokens float64) int {
	n, total := s.MessageCount, s.TokenCount
	if n <= 0 || total <= 0 {
		n, total = len(msgs), tokensOf(msgs)
	}
	if tokens <= 0 || n == 0 || total <= 0 {
		return 0
	}
	per := tokens * float64(n) / float64(total)
	step := 1
	for float64(step*2) <= per {
		step *= 2
	}
	if float64(step*3/2) <= per {
		return step * 3 / 2
	}
	return step
}

// fitInSteps returns the most recent whole bundles of msgs within budget,
// from a start that moves forward step messages at a time: the first bundle
// at or after the next mark (a seq that is a multiple of step) at or
// after the fit's own start. The marks are message numbers, not positions
// in msgs, so the start stays put from turn to turn, while the stored
// tail that msgs comes from is trimmed at its start, until the budget
// forces the fit past the mark. step 0 or 1, or the whole history (msgs
// complete) within budget: FitBudget.
func fitInSteps(msgs []Message, complete bool, budget, step int) []Message {
	fit := FitBudget(msgs, budget)
	if step <= 1 || len(fit) == 0 || (complete && len(fit) == len(msgs)) {
		return fit
	}
	mark := (fit[0].Seq + step - 1) / step * step
	us := bundles(fit)
	for i, u := range us {
		if u.msgs[0].Seq >= mark {
			return flatten(us[i:])
		}
	}
	return fit
}

// flatten is the messages of us, in order.
func flatten(us []bundle) []Message {
	var out []Message
	for _, u := range us {
		out = append(out, u.msgs...)
	}
	return out
}

// FitBudget returns the most recent whole bundles of msgs (oldest first) whose
// tokens sum to at most budget, oldest first. Tool exchanges stay whole.
func FitBudget(msgs []Message, budget int) []Message {
	us := bundles(msgs)
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

// bundle is a run of messages that must be sent together or not at all: an
// assistant message with tool calls and all of its results, or one other
// message.
type bundle struct {
	msgs   []Message
	tokens int
}

// bundles groups msgs (oldest first) into bundles, leaving out what cannot be
// sent: tool results whose call is not in msgs, and assistant tool calls
// whose results are not all in msgs.
func bundles(msgs []Message) []bundle {
	var out []bundle
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == RoleTool:
			continue // its call is not here (it was before the window)
		case len(m.ToolCalls) == 0:
			out = append(out, bundle{msgs: msgs[i : i+1], tokens: m.Tokens})
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
			out = append(out, bundle{msgs: msgs[i:j], tokens: tokens})
		}
		i = j - 1
	}
	return out
}

func tokensOf(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += m.Tokens
	}
	return n
}

// after returns the messages with seq > seq.
func after(msgs []Message, seq int) []Message {
	for i, m := range msgs {
		if m.Seq > seq {
			return msgs[i:]
		}
	}
	return nil
}

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

// keepImages returns msgs with the images of every user message before
// the last n sent as their names: copies of those messages whose parts
// are marked Omitted and whose tokens no longer count the images.
func keepImages(msgs []Message, n int) []Message {
	users := 0
	out := msgs
	copied := false
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != RoleUser {
			continue
		}
		if users++; users <= n || !hasImage(msgs[i].Attachments) {
			continue
		}
		if !copied {
			out, copied = append([]Message(nil), msgs...), true
		}
		out[i] = omitImages(out[i])
	}
	return out
}

func hasImage(parts []Part) bool {
	for i := range parts {
		if parts[i].IsImage() && !parts[i].Omitted {
			return true
		}
	}
	return false
}

// omitImages is m with its images sent as their names.
func omitImages(m Message) Message {
	m.Attachments = append([]Part(nil), m.Attachments...)
	for i := range m.Attachments {
		p := &m.Attachments[i]
		if p.IsImage() && !p.Omitted {
			m.Tokens += labelTokens(p) - p.Tokens
			p.Omitted = true
		}
	}
	return m
}

// Complete reports whether the tail holds the whole active branch of s.
func (t *Tail) Complete(s *sessions.Session) bool {
	first := s.Path().From(s.Bookkeeping.HistoryFrom) // messages before HistoryFrom are gone
	if len(t.Messages) == 0 {
		return first < 0
	}
	return t.Messages[0].Seq == first
}
