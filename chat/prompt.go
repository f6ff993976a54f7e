package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// prompt is what the model is sent: the context built, with the memory
// block (and the recalled excerpts) in it.
type prompt struct {
	context *history.Context
	memory  memoryBlock
	fixed   int // the tokens of the system prompt and the session's instructions (see fixed)
}

// prompt builds what the model is sent for the user's message: the
// session's context with the memory block, and the recalled excerpts
// when they fit, within the budget the tools' definitions (of toolTokens)
// leave. The message must be in it.
func (svc *Service) prompt(ctx context.Context, st *TurnState, user history.Message, recall *recaller, toolTokens int) (prompt, error) {
	s := st.Session
	fixed := svc.fixed(s)
	mem := svc.memoryFor(ctx, recall, st.Memory, s.ID)
	// The context is chosen from the tail: no reads, no tokenizing of
	// stored messages.
	built, err := history.Build(s, st.Tail, svc.History.BudgetFor(s), fixed+toolTokens+mem.tokens)
	if err != nil {
		return prompt{}, err
	}
	if text, n := svc.recallBlock(ctx, recall, s, built); n > 0 {
		mem = mem.with(text, n)
		if built, err = history.Build(s, st.Tail, built.Budget, fixed+toolTokens+mem.tokens); err != nil {
			return prompt{}, err
		}
	}
	if !contains(built.Messages, user.Seq) {
		return prompt{}, errs.Errorf(errs.EINVALID, "the message does not fit the model's context budget of %d tokens", built.Budget)
	}
	return prompt{context: built, memory: mem, fixed: fixed}, nil
}

// The memory block in a turn's request has two parts, placed for the
// provider's prompt cache (see docs/context.md): its stable part (the
// profile, the history and the facts as of the day before, which change
// at a roll-up, once a day, or when a fact is dropped) goes first, after
// the session's instructions, byte-identical from turn to turn; its
// recent part (what was learned today), the facts chosen for this
// message when the block leaves some out, and the recalled excerpts go
// after the history, next to the message they serve, and are never
// stored with it.

// memoryFor is the memory a turn sends: the block as read, with the
// facts it leaves out that are most relevant to the turn's message when
// the message is embedded.
func (svc *Service) memoryFor(ctx context.Context, r *recaller, m MemoryBlock, sessionID string) memoryBlock {
	relevance := m.Relevance()
	mem := blockOf(m)
	if relevance == nil || svc.Memory == nil || r.embedded == nil {
		return mem
	}
	type read struct {
		u   *longterm.User
		err error
	}
	facts := make(chan read, 1)
	go func() { // the facts, read beside the embedding
		u, err := svc.Memory.WithFacts(ctx, relevance)
		facts <- read{u, err}
	}()
	if <-r.embedded; r.embedErr != nil {
		svc.logError(ctx, "embedding the message failed; the memory block goes without the facts relevant to it", sessionID, r.embedErr)
		return mem
	}
	got := <-facts
	if got.err != nil {
		svc.logError(ctx, "reading the long-term facts failed; the memory block goes without the facts relevant to it", sessionID, got.err)
		return mem
	}
	if text, n := svc.Memory.Relevant(got.u, r.vector); n > 0 {
		mem = mem.with(text, n)
	}
	return mem
}

// fixed returns the tokens a request of session s holds besides its
// history and memory: the operator's system prompt (counted once a model)
// and the session's instructions.
func (svc *Service) fixed(s *sessions.Session) int {
	n := svc.systemPrompt(s.Model)
	if s.Instructions != "" {
		n += svc.History.Tokens.Count(s.Model, &history.Message{Role: history.RoleSystem, Content: s.Instructions})
	}
	return n
}

// systemPrompt returns the tokens of the system prompt for model, counted once.
func (svc *Service) systemPrompt(model string) int {
	if svc.SystemPrompt == "" {
		return 0
	}
	if n, ok := svc.systemTokens.Load(model); ok {
		return n.(int)
	}
	n := svc.History.Tokens.Count(model, &history.Message{Role: history.RoleSystem, Content: svc.SystemPrompt})
	svc.systemTokens.Store(model, n)
	return n
}

// request is what the model is sent for a built context: the system
// prompt, the instructions, the memory block's stable part, the summary in
// use as a system message, then the messages verbatim, with what changes
// more often (the block's recent part, the facts chosen for the message,
// the recalled excerpts) next to the message the turn answers.
func (svc *Service) request(s *sessions.Session, c *history.Context, mem memoryBlock) Request {
	msgs := c.Messages
	if c.Compaction != nil {
		msgs = append([]history.Message{history.SummaryMessage(c.Compaction)}, msgs...)
	}
	first, next := mem.parts(svc.LegacyOrder)
	return Request{Model: s.Model, System: svc.SystemPrompt, Instructions: s.Instructions, Memory: first, Context: next, Messages: msgs, CacheKey: s.ID,
		ImageDetail: svc.imageDetail()}
}

// recallHeader opens the recalled excerpts, so that the model knows what
// they are.
const recallHeader = "Excerpts recalled from the user's earlier conversations (by relevance to the current message; they may be out of date):"

// recallBlock returns the excerpts to add to the turn's system messages,
// with their tokens: those not in the context already, each clipped to its
// share of the session's cap, counted, and kept while the cap holds. A
// recall that failed adds nothing (and is logged).
func (svc *Service) recallBlock(ctx context.Context, r *recaller, s *sessions.Session, c *history.Context) (string, int) {
	if r.done == nil {
		return "", 0
	}
	<-r.done
	if r.err != nil {
		svc.logError(ctx, "recall failed; the turn goes on without it", s.ID, r.err)
		return "", 0
	}
	in := map[string]bool{}
	for _, m := range c.Messages {
		in[m.ID] = true
	}
	k, limit := r.k, r.limit
	count := func(text string) int { // as a message of its own: over-counts the joins
		return svc.History.Tokens.Count(s.Model, &history.Message{Role: history.RoleSystem, Content: text})
	}
	tokens := count(recallHeader)
	chars := 4 * limit / k // about a share of the cap, in characters
	var b strings.Builder
	for _, x := range r.got {
		if x.SessionID == s.ID && (in[x.Question.ID] || in[x.Reply.ID]) {
			continue
		}
		title := x.SessionTitle
		if x.SessionID == s.ID {
			title = "this conversation"
		}
		text := recalledText(x, title, chars)
		if n := count(text); tokens+n <= limit {
			tokens += n
			b.WriteString(text)
		}
	}
	if b.Len() == 0 {
		return "", 0
	}
	return recallHeader + b.String(), tokens
}

// recalledText is one recalled unit as the model reads it: its date (its
// reply's, else its question's), its session's title, and the start of
// its messages in about chars runes (a question a third of them when a
// reply follows). A message with no partner shows alone.
func recalledText(x recall.Unit, title string, chars int) string {
	at := x.Reply.CreatedAt
	if x.Reply.ID == "" {
		at = x.Question.CreatedAt
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n[%s, %q]", at.UTC().Format("2006-01-02"), title)
	left := chars
	if x.Question.ID != "" {
		share := chars
		if x.Reply.ID != "" {
			share = chars / 3
		}
		q := clipExcerpt(x.Question, share)
		fmt.Fprintf(&b, "\nuser: %s", q)
		left -= utf8.RuneCountInString(q)
	}
	if x.Reply.ID != "" {
		fmt.Fprintf(&b, "\nassistant: %s", clipExcerpt(x.Reply, left))
	}
	return b.String()
}

// clipExcerpt is up to n runes of x's text, marked when it is not all of
// the message.
func clipExcerpt(x recall.Excerpt, n int) string {
	text, clipped := x.Content, x.Clipped
	if utf8.RuneCountInString(text) > n {
		text, clipped = string([]rune(text)[:max(n, 0)]), true
	}
	if clipped {
		text += "…"
	}
	return text
}

// contains reports whether msgs hold the message numbered seq.
func contains(msgs []history.Message, seq int) bool {
	for _, m := range msgs {
		if m.Seq == seq {
			return true
		}
	}
	return false
}

// toolsFor are the tools and the choice a turn's model request carries:
// the request's, until the replies since the user's message have called
// tools MaxToolRounds times; then the model must answer in text.
func (svc *Service) toolsFor(req TurnRequest, t *history.Tail) ([]Tool, string) {
	if len(req.Tools) == 0 {
		return nil, ""
	}
	limit := svc.MaxToolRounds
	if limit <= 0 {
		limit = DefaultMaxToolRounds
	}
	if toolRounds(t.Messages) >= limit {
		return req.Tools, ToolChoiceNone
	}
	return req.Tools, req.ToolChoice
}

// toolRounds counts the replies with tool calls since the last user
// message of msgs (oldest first).
func toolRounds(msgs []history.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != history.RoleUser; i-- {
		if len(msgs[i].ToolCalls) > 0 {
			n++
		}
	}
	return n
}

// toolTokens estimates what the tools' definitions cost in the prompt.
func (svc *Service) toolTokens(model string, tools []Tool) int {
	if len(tools) == 0 {
		return 0
	}
	b, _ := json.Marshal(tools)
	return svc.History.Tokens.Count(model, &history.Message{Role: history.RoleSystem, Content: string(b)})
}

// MemoryBlock is the user's long-term memory as a turn reads it.
type MemoryBlock struct {
	Text   string
	Tokens int // of Text alone
	// Source is the memory as the turn read it (nil: none was read):
	// learning after the turn starts from it instead of reading it again.
	Source *longterm.User
}

// Relevance is the memory the block was made from when the turn may add
// facts chosen by relevance to its message: when the block leaves
// embedded facts out. Nil otherwise.
func (m MemoryBlock) Relevance() *longterm.User {
	if u := m.Source; u != nil && !u.Disabled && u.BlockCut && u.VectorModel != "" {
		return u
	}
	return nil
}

// MemoryOf is the block a turn reads for u (as a store returns it), with
// u itself as its Source: no text when memory is off.
func MemoryOf(u *longterm.User) MemoryBlock {
	if u == nil {
		return MemoryBlock{}
	}
	if u.Disabled {
		return MemoryBlock{Source: u}
	}
	return MemoryBlock{Text: u.Block, Tokens: u.BlockTokens, Source: u}
}

// memoryBlock is what a turn sends of the user's memory: the block's
// stable part, and what changes more often (the block's recent part, the
// facts chosen for the message, the recalled excerpts), with the tokens
// of both as system messages.
type memoryBlock struct {
	stable, recent string
	tokens         int
}

// systemMessageTokens is what wrapping a text in a system message adds.
const systemMessageTokens = 4

// blockOf is the block as read, in its two parts.
func blockOf(m MemoryBlock) memoryBlock {
	if m.Text == "" {
		return memoryBlock{}
	}
	stable, recent := longterm.SplitBlock(m.Text)
	if stable == "" || recent == "" {
		return memoryBlock{stable: stable, recent: recent, tokens: m.Tokens + systemMessageTokens}
	}
	return memoryBlock{stable: stable, recent: recent, tokens: m.Tokens + 2*systemMessageTokens}
}

// with is the memory with text (of n tokens) added to what changes often.
func (m memoryBlock) with(text string, n int) memoryBlock {
	if m.recent == "" {
		m.recent, m.tokens = text, m.tokens+n+systemMessageTokens
		return m
	}
	m.recent, m.tokens = m.recent+"\n\n"+text, m.tokens+n
	return m
}

// parts are the system messages m is sent as: before the summary and the
// history, and after the history, next to the message; with legacy, all
// of it before them, as requests were ordered before the cache order.
func (m memoryBlock) parts(legacy bool) (first, next string) {
	if !legacy {
		return m.stable, m.recent
	}
	if m.stable == "" || m.recent == "" {
		return m.stable + m.recent, ""
	}
	return m.stable + "\n" + m.recent, ""
}
