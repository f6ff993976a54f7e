package chat

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Preview is what the next turn of a session would send the model.
type Preview struct {
	Context *history.Context
	Request Request
	// Version names the session and its context as read: an append given
	// it as ifMatch lands only if neither changed since.
	Version string
	// CompactionDue, under summary_buffer, is the range of messages the
	// next summary should fold in, when one is due (see AfterAppend); nil
	// otherwise.
	CompactionDue *history.CompactionPlan
}

// Preview returns the caller's session's next context, read in one round
// trip (the session, its context and the memory block together) whatever
// the length of the session; a store may read less, and then, when what
// it kept proves stale, twice (see TurnStore.ReadTurn).
func (svc *Service) Preview(ctx context.Context, userID, sessionID string) (*Preview, error) {
	if err := sessions.CheckID(sessionID); err != nil {
		return nil, err
	}
	st, err := svc.Turns.ReadTurn(ctx, TurnQuery{UserID: userID, SessionID: sessionID, Memory: svc.Memory != nil})
	if err != nil {
		return nil, err
	}
	if st.Session == nil {
		return nil, sessions.NotFound(sessionID)
	}
	if err := st.Session.CheckOwner(userID); err != nil {
		return nil, err
	}
	mem := blockOf(st.Memory)
	c, err := svc.build(st.Session, st.Tail, mem, 0)
	if err != nil {
		return nil, err
	}
	p := &Preview{Context: c, Request: svc.request(st.Session, c, mem), Version: st.ContextVersion}
	// The summary is planned against the block as it stands, as the
	// server plans its own after an append (summaryFixed).
	if plan, due := history.PlanCompaction(st.Session, st.Tail, svc.History.BudgetFor(st.Session), svc.fixed(st.Session)+mem.tokens); due {
		p.CompactionDue = &plan
	}
	return p, nil
}

// build chooses the session's context from its tail: no reads, no
// tokenizing of stored messages.
func (svc *Service) build(s *sessions.Session, t *history.Tail, mem memoryBlock, toolTokens int) (*history.Context, error) {
	return history.Build(s, t, svc.History.BudgetFor(s), svc.fixed(s)+mem.tokens+toolTokens)
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
