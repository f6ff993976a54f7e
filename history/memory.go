package history

import (
	"fmt"
	"slices"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Tail is a session's context document, kept up to date in the same
// transaction as every append: the latest messages verbatim (whole units,
// at most the session's budget of tokens and MaxTailBytes of text) and the
// summary in use. A turn's context is built from it alone, so building a
// context costs the same at turn 5 and at turn 5,000. The raw history in
// the messages collection is never touched by it.
type Tail struct {
	Messages   []Message   // oldest first
	Compaction *Compaction // the summary of everything up to its EndSeq; nil if none
	// CompactingUntil is the lease of a compaction in progress.
	CompactingUntil time.Time
}

// MaxTailBytes caps what a tail holds, by StoredBytes. A store keeps the
// tail in bounded pages and writes only the pages an append changes; this
// cap bounds how many pages a tail spans.
const MaxTailBytes = 400 << 10

// Compaction is a summary record: Summary covers every message up to EndSeq
// (it was made from the previous summary and messages StartSeq..EndSeq).
// Records are added, never changed; raw messages stay as they were.
type Compaction struct {
	ID        string    `json:"id"`
	StartSeq  int       `json:"startSeq"`
	EndSeq    int       `json:"endSeq"`
	Summary   string    `json:"summary"`
	Tokens    int       `json:"tokens"` // of the summary as a system message
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"createdAt"`
}

// CompactionID is the record id for a summary up to endSeq: two compactions
// of the same range cannot both be stored.
func CompactionID(endSeq int) string { return fmt.Sprintf("e%010d", endSeq) }

// Complete reports whether the tail holds the whole active branch of s.
func (t *Tail) Complete(s *sessions.Session) bool {
	if len(t.Messages) == 0 {
		return s.Leaf() < 0
	}
	return t.Messages[0].Seq == s.Path().Start()
}

// StoredBytes bounds from above what a message takes in a tail as a store
// keeps it: its text plus a generous allowance for field names, numbers
// and times (Firestore's storage-size rules give 90 to 250 bytes for the
// fields of a short message; its size function is tested against this).
func StoredBytes(m *Message) int {
	n := 256 + len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += 64 + len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n
}

// add appends msgs and drops the oldest messages while the tail holds more
// than keep tokens or MaxTailBytes. Tool results are dropped with the call
// they answer, never left behind on their own.
func (t *Tail) add(msgs []Message, keep int) {
	for _, m := range msgs {
		t.Messages = append(t.Messages, tailCopy(m))
	}
	tokens, bytes := 0, 0
	for i := range t.Messages {
		tokens += t.Messages[i].Tokens
		bytes += StoredBytes(&t.Messages[i])
	}
	drop := 0
	for drop < len(t.Messages)-1 && (tokens > keep || bytes > MaxTailBytes) {
		tokens -= t.Messages[drop].Tokens
		bytes -= StoredBytes(&t.Messages[drop])
		drop++
		for drop < len(t.Messages)-1 && t.Messages[drop].Role == RoleTool {
			tokens -= t.Messages[drop].Tokens
			bytes -= StoredBytes(&t.Messages[drop])
			drop++
		}
	}
	t.Messages = append([]Message(nil), t.Messages[drop:]...)
}

// SetIDs gives the tail's copies of written the ids the store gave them
// (an append plans messages before the store names them).
func (t *Tail) SetIDs(written []Message) {
	ids := make(map[int]string, len(written))
	for _, m := range written {
		ids[m.Seq] = m.ID
	}
	for i := range t.Messages {
		if id, ok := ids[t.Messages[i].Seq]; ok {
			t.Messages[i].ID = id
		}
	}
}

// tailCopy keeps what a context needs of a message.
func tailCopy(m Message) Message {
	return Message{ID: m.ID, SessionID: m.SessionID, Seq: m.Seq, ParentSeq: m.ParentSeq, Role: m.Role, Content: m.Content, Name: m.Name,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt, Tokens: m.Tokens}
}

// Context is what a turn sends the model, besides its system prompt.
type Context struct {
	Strategy   sessions.Strategy `json:"strategy"`
	Budget     int               `json:"budget"`
	Tokens     int               `json:"tokens"` // system prompt, summary, messages and reply priming
	Compaction *Compaction       `json:"compaction"`
	Messages   []Message         `json:"-"` // verbatim history, oldest first
}

// SummaryPrefix opens the system message that carries a summary.
const SummaryPrefix = "Summary of the earlier conversation (messages 0–%d):\n"

// SummaryMessage is the system message that carries c into a context.
func SummaryMessage(c *Compaction) Message {
	return Message{Role: RoleSystem, Content: fmt.Sprintf(SummaryPrefix, c.EndSeq) + c.Summary}
}

// Build chooses the history the model sees under mem, within budget tokens
// of which fixed (the system prompt) are taken already. Every context it
// returns keeps tool exchanges whole and stays within budget.
func Build(s *sessions.Session, t *Tail, budget, fixed int) (*Context, error) {
	mem := s.Memory
	c := &Context{Strategy: mem.Strategy, Budget: budget}
	avail := budget - fixed - ReplyPriming
	switch mem.Strategy {
	case sessions.StrategyBuffer:
		all := FitBudget(t.Messages, 1<<62)
		if !t.Complete(s) || tokensOf(all) > avail {
			return nil, errs.Errorf(errs.EPRECONDITION,
				"the whole history no longer fits the model's context budget of %d tokens: switch this session to another memory strategy", budget)
		}
		c.Messages = all
	case sessions.StrategyWindow:
		c.Messages = FitBudget(lastExchanges(t.Messages, mem.WindowExchanges), avail)
	case sessions.StrategyTokenBuffer:
		c.Messages = FitBudget(t.Messages, avail)
	default: // summary_buffer
		verbatim := t.Messages
		if cp := t.Compaction; cp != nil && cp.Tokens < avail {
			c.Compaction = cp
			avail -= cp.Tokens
			verbatim = after(t.Messages, cp.EndSeq)
		}
		c.Messages = FitBudget(verbatim, avail)
	}
	c.Tokens = fixed + ReplyPriming + tokensOf(c.Messages)
	if c.Compaction != nil {
		c.Tokens += c.Compaction.Tokens
	}
	return c, nil
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

// lastExchanges returns the last k exchanges: each starts at a user message.
func lastExchanges(msgs []Message, k int) []Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			if k--; k == 0 {
				return msgs[i:]
			}
		}
	}
	return msgs
}

// Compaction thresholds, as shares of the budget left for history: once the
// verbatim part passes compactAbove, the oldest of it is summarized until
// what stays verbatim is at most keepBelow. Each summarization handles at
// most MaxCompactMessages messages, so it costs a bounded amount however
// long the session is.
const (
	compactAbovePct    = 60
	keepBelowPct       = 30
	MaxCompactMessages = 200
)

// CompactionPlan is a range of messages to fold into the summary.
type CompactionPlan struct {
	Previous *Compaction // the summary to extend; nil for the first
	StartSeq int
	EndSeq   int
}

// PlanCompaction says whether a summary_buffer session should compact now,
// and which messages. The range starts right after the previous summary and
// ends on a unit boundary inside the tail, leaving the latest exchange
// verbatim.
func PlanCompaction(s *sessions.Session, t *Tail, budget, fixed int) (CompactionPlan, bool) {
	if s.Memory.Strategy != sessions.StrategySummaryBuffer || len(t.Messages) == 0 {
		return CompactionPlan{}, false
	}
	avail := budget - fixed - ReplyPriming
	p := CompactionPlan{Previous: t.Compaction}
	verbatim := t.Messages
	if p.Previous != nil {
		p.StartSeq = p.Previous.EndSeq + 1
		verbatim = after(t.Messages, p.Previous.EndSeq)
		avail -= p.Previous.Tokens
	}
	total := tokensOf(verbatim)
	if total <= avail*compactAbovePct/100 {
		return CompactionPlan{}, false
	}
	us := units(verbatim)
	keep := avail * keepBelowPct / 100
	end := -1
	for i := 0; i < len(us)-1 && total > keep; i++ { // never the last unit
		total -= us[i].tokens
		last := us[i].msgs[len(us[i].msgs)-1].Seq
		if last-p.StartSeq+1 > MaxCompactMessages && end >= 0 {
			break
		}
		end = last
	}
	if end < p.StartSeq {
		return CompactionPlan{}, false
	}
	if end-p.StartSeq+1 > MaxCompactMessages { // a long gap behind the tail
		end = p.StartSeq + MaxCompactMessages - 1
	}
	p.EndSeq = end
	return p, true
}

// Clone returns a copy of t that can be changed without changing t.
func (t *Tail) Clone() *Tail {
	c := *t
	c.Messages = slices.Clone(t.Messages)
	return &c
}
