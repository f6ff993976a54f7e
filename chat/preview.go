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
	s, mem := st.Session, blockOf(st.Memory)
	fixed, budget := svc.fixed(s)+mem.tokens, svc.History.BudgetFor(s)
	c, err := history.Build(s, st.Tail, budget, fixed)
	if err != nil {
		return nil, err
	}
	p := &Preview{Context: c, Request: svc.request(s, c, mem), Version: st.ContextVersion}
	// The summary is planned against the block as it stands, as the
	// server plans its own after an append (summaryFixed).
	if plan, due := history.PlanCompaction(s, st.Tail, budget, fixed); due {
		p.CompactionDue = &plan
	}
	return p, nil
}
