package chat

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// claim is what claiming a turn decided.
type claim struct {
	// Decided once per request, before anything is read: a plan that runs
	// again (its commit raced another, or its answer was lost) writes the
	// same ids and the same lease, and knows its own claim by token.
	token   string
	op      sessions.Operation
	replyID string
	userID  string // the new user message's id; "" for a keyed one
	draft   bool   // the reply streams through a draft
	// Decided by each try to claim: when it claims, and its lease.
	at, lease time.Time

	user   history.Message
	replay *TurnResult // the turn was complete already
	// draftVersion is the store's record of the draft's last write.
	draftVersion Version
}

// leaseMargin is how much longer than the model may take a turn holds the
// session's answering lease: past it, another request may take over.
const leaseMargin = 15 * time.Second

// claimTurn claims the turn, waiting while another message of the
// session is answered (unless it branches: what it branches from may
// change meanwhile), and returns the state its commit left.
func (svc *Service) claimTurn(ctx context.Context, plan *turnPlan, recall *recaller) (*TurnState, error) {
	var st *TurnState
	err := svc.waitTurn(plan.fork == nil, func() (err error) {
		st, err = svc.tryClaim(ctx, plan, recall)
		return err
	})
	return st, err
}

// DefaultBusyWait is how long a turn or an append waits for another
// message of its session to be answered before it answers ECONFLICT with
// a Retry-After.
const DefaultBusyWait = 30 * time.Second

// waitTurn runs try until it no longer finds its session answering another
// message (sessions.ErrBusy), for at most BusyWait, if wait is set: a
// second tab's turn waits its turn instead of failing. A regeneration or
// an edit does not wait: what it branches from may change meanwhile.
func (svc *Service) waitTurn(wait bool, try func() error) error {
	limit := svc.BusyWait
	if limit <= 0 {
		limit = DefaultBusyWait
	}
	deadline := time.Now().Add(limit)
	for i := 0; ; i++ {
		err := try()
		if !wait || !errors.Is(err, sessions.ErrBusy) || time.Now().After(deadline) {
			return err
		}
		d := min(50*time.Millisecond<<min(i, 6), 2*time.Second) // each try is a read: back off
		time.Sleep(d/2 + rand.N(d/2+1))
	}
}

// tryClaim claims the turn as of now, with a lease from now, in one read
// and one commit: the user's rate-limit slots likely free are read with
// it, and all of them when those prove taken. The recall's embedding and
// query start beside the commit.
func (svc *Service) tryClaim(ctx context.Context, plan *turnPlan, recall *recaller) (*TurnState, error) {
	c := plan.claim
	c.at = svc.now()
	c.lease = c.at.Add(svc.ModelTimeout + leaseMargin)
	q := plan.query
	planClaim := func(st *TurnState) (*TurnWrite, error) {
		w, err := svc.claim(st, q, plan)
		if err == nil && w != nil && w.Session != nil { // the session as the claim writes it (a new one too)
			svc.startEmbeds(ctx, recall, w.Session, plan.draft.Content, st.Memory.Relevance() != nil, others(st))
		}
		return w, err
	}
	q.Slots = slotsToRead(svc.Limits.TurnsPerMinute, false)
	st, err := svc.Turns.RunTurn(ctx, q, nil, planClaim)
	if err == errMoreSlots {
		q.Slots = slotsToRead(svc.Limits.TurnsPerMinute, true)
		st, err = svc.Turns.RunTurn(ctx, q, nil, planClaim)
	}
	return st, err
}

// claim plans the commit that claims a turn on the state read: it checks
// the session and the key, admits the turn under the user's limits, and
// appends the user's message (or, answering a stored message, only takes
// the lease), with the session's answering lease in the same commit.
func (svc *Service) claim(st *TurnState, q TurnQuery, plan *turnPlan) (*TurnWrite, error) {
	c := plan.claim
	c.user, c.replay = history.Message{}, nil
	// What the claim read is weighed first (the message stored under the
	// key against this request, then the session), and decided after.
	again := c.asksAgain(st, plan.keyed)
	check := sessions.CheckClaim(st.Session, sessions.Claim{SessionID: q.SessionID, UserID: q.UserID, New: q.New,
		Key: q.Key, Token: c.token, Op: c.op, At: c.at})
	if check.Access != nil {
		return nil, check.Access
	}
	s, err := svc.sessionToClaim(st, q)
	if err != nil {
		return nil, err
	}
	if check.Own != nil {
		// This request's claim is stored: its commit landed, but the
		// answer was lost on the way. Carry on from what it wrote.
		return nil, c.claimed(st, check.Own.Seq)
	}
	if err := c.checkKey(st, q, s, again, check.Reused); err != nil || c.replay != nil {
		return nil, err
	}
	if err := claimable(st, q, check, plan.fork); err != nil {
		return nil, err
	}
	slot, err := svc.admit(st, q, c.at)
	if err != nil {
		return nil, err
	}
	user, tail, msgs, err := svc.userMessage(st, q, s, plan)
	if err != nil {
		return nil, err
	}
	c.user = user
	s.Bookkeeping.Answering = &sessions.Answering{Seq: user.Seq, ReplyID: c.replyID, Key: q.Key, Op: c.op, Token: c.token, Until: c.lease}
	return &TurnWrite{Session: s, Tail: tail, Messages: msgs, Slot: slot, Minute: c.at.Unix() / 60, Draft: c.startDraft()}, nil
}

// sessionToClaim is the session a turn claims, as a copy to change: the
// one read, or, for a turn that starts one (its check let it), a new one.
func (svc *Service) sessionToClaim(st *TurnState, q TurnQuery) (*sessions.Session, error) {
	if st.Session == nil {
		return svc.Sessions.New(q.UserID, sessions.CreateInput{ID: q.SessionID})
	}
	return st.Session.Clone(), nil
}

// claimable refuses a turn the session cannot take now (as its check
// says): one under a key still in progress, one while another reply is
// being written; then a regeneration of a message that is not there, and
// a turn in a session that is not writable.
func claimable(st *TurnState, q TurnQuery, check sessions.ClaimCheck, f *fork) error {
	if check.Busy != nil {
		return check.Busy
	}
	if f != nil && f.regenerate && st.Asked == nil {
		return errs.Errorf(errs.ENOTFOUND, "message %s not found", q.AskedID)
	}
	return check.Writable
}

// admit is the rate-limit slot a turn takes (see AdmitTurn); errMoreSlots
// when every slot read is taken but others, unread, may be free.
func (svc *Service) admit(st *TurnState, q TurnQuery, now time.Time) (int, error) {
	slot, err := AdmitTurn(now, svc.Limits, st.DayTokens, st.Slots, rand.IntN)
	if errs.CodeOf(err) == errs.ERATELIMITED && len(q.Slots) < min(svc.Limits.TurnsPerMinute, MaxTurnsPerMinute) &&
		admitDay(now, svc.Limits, st.DayTokens) == nil {
		return 0, errMoreSlots
	}
	return slot, err
}

// userMessage is the message a turn answers, with the tail and the
// messages its claim writes: a stored one (a regeneration, on a branch of
// its own, or a retry taking a failed turn over), or the request's, stored
// after the tail (an edit's after the message it edits).
func (svc *Service) userMessage(st *TurnState, q TurnQuery, s *sessions.Session, plan *turnPlan) (history.Message, *history.Tail, []history.Message, error) {
	c, f := plan.claim, plan.fork
	if st.Asked != nil {
		var tail *history.Tail
		if f != nil && f.regenerate {
			tail = svc.History.ForkTail(s, f.base, f.leaf)
		}
		return lastOfBatch(st.Asked, st.Tail.Messages), tail, nil, nil
	}
	tail := st.Tail
	if f != nil {
		tail = svc.History.ForkTail(s, f.base, f.leaf)
	}
	drafts, err := turnMessages(s, plan.req, plan.draft)
	if err != nil {
		return history.Message{}, nil, nil, err
	}
	msgs, t, err := svc.History.AppendMany(s, tail, q.Key, c.batchIDs(q.Key, drafts), drafts...)
	if err != nil {
		return history.Message{}, nil, nil, err
	}
	if q.Key != "" {
		for i := range msgs {
			msgs[i].Op = c.op
		}
	}
	return msgs[len(msgs)-1], t, msgs, nil
}

// batchIDs names the messages a turn stores: the one stored under the key
// (the user's message, else the first tool result) by the key (or the
// claim's id for it when unkeyed), the others after it.
func (c *claim) batchIDs(key string, drafts []history.Draft) []string {
	primary := len(drafts) - 1 // the user's message, after the calls it abandons
	if drafts[primary].Role == history.RoleTool {
		primary = 0 // tool results
	}
	out := make([]string, len(drafts))
	next := 1
	for i := range drafts {
		n := next
		if i == primary {
			n = 0
		} else {
			next++
		}
		switch {
		case key != "":
			out[i] = history.KeyedMessageID(key, n)
		case n == 0:
			out[i] = c.userID
		default:
			out[i] = fmt.Sprintf("%s-%d", c.userID, n)
		}
	}
	return out
}

// lastOfBatch is the message a turn that stored asked answers: asked, or
// the last of the tool results stored after it in the same batch.
func lastOfBatch(asked *history.Message, tail []history.Message) history.Message {
	last := *asked
	for _, m := range tail {
		if last.Role == history.RoleTool && m.Role == history.RoleTool && m.ParentSeq == last.Seq {
			last = m
		}
	}
	return last
}

// claimed picks up a claim of this request found stored: the message it
// answers is the one it read by id or key, or the newest of its tail.
func (c *claim) claimed(st *TurnState, seq int) error {
	if st.Asked != nil && st.Asked.Seq == seq {
		c.user = *st.Asked
		return nil
	}
	for _, m := range st.Tail.Messages {
		if m.Seq == seq {
			c.user = m
			return nil
		}
	}
	return errs.Errorf(errs.EINTERNAL, "the claimed message %d is not in the session's tail", seq)
}

// asksAgain reports whether the message st read for the claim (under its
// key, or by id) is this request's: stored by the same operation, with the
// same content (draft).
func (c *claim) asksAgain(st *TurnState, draft history.Draft) bool {
	return st.Asked != nil && sameOp(opOf(st.Asked), c.op) && st.Asked.SameContent(&draft)
}

// checkKey holds a key to one operation on one session, as Stripe's
// idempotency keys: reused with another kind of request, another target
// or another message (again: the message stored under it is not this
// request's), it is ECONFLICT; reused with the same request that is
// complete, it replays it (c.replay).
func (c *claim) checkKey(st *TurnState, q TurnQuery, s *sessions.Session, again, leaseReused bool) error {
	if q.Key == "" {
		return nil
	}
	reused := errs.Errorf(errs.ECONFLICT, "clientMessageId %q was already used for another request", q.Key)
	switch {
	case c.op.Kind == sessions.OpRegenerate && st.KeyUsed:
		return reused // the key stored a message: it named a turn or an edit
	case c.op.Kind != sessions.OpRegenerate && st.Asked != nil && !again:
		return reused
	}
	if leaseReused { // the lease in force holds the key for another operation
		return reused
	}
	if st.Answer == nil {
		return nil
	}
	if !sameOp(opOf(st.Answer), c.op) || st.Asked == nil {
		return reused
	}
	c.replay = &TurnResult{Session: s, User: *st.Asked, Reply: *st.Answer, Replayed: true}
	return nil
}

// opOf is the operation a keyed message was stored by.
func opOf(m *history.Message) sessions.Operation {
	if m.Op.Kind == "" {
		return sessions.Operation{Kind: sessions.OpTurn}
	}
	return m.Op
}

// sameOp tells whether a key's stored operation is op: tool results
// stored before their digest was kept (no Target) are compared by their
// first result only.
func sameOp(stored, op sessions.Operation) bool {
	if stored.Kind == sessions.OpTools && stored.Target == "" {
		return op.Kind == sessions.OpTools
	}
	return stored == op
}

// startDraft is the draft a streaming turn starts in its claim.
func (c *claim) startDraft() *DraftWrite {
	if !c.draft {
		return nil
	}
	return &DraftWrite{ReplyID: c.replyID, UserMessageID: c.user.ID, Create: true}
}

// turnMessages are what a turn stores before the model is called, given
// the calls s awaits results for: the tool results it sends (each for a
// call awaiting one, all of them answered), or its message, after a
// result "not run" for each call awaiting one when the request abandons
// them. The message the reply answers is the last.
func turnMessages(s *sessions.Session, req TurnRequest, draft history.Draft) ([]history.Draft, error) {
	pending := s.Bookkeeping.PendingToolCalls
	if len(req.ToolResults) > 0 {
		return toolResultDrafts(pending, req.ToolResults)
	}
	if len(pending) == 0 {
		return []history.Draft{draft}, nil
	}
	if !req.AbandonTools {
		return nil, errs.Errorf(errs.ECONFLICT, "tool calls %s await their results: send toolResults, or the message with abandonTools: true", strings.Join(pending, ", "))
	}
	out := make([]history.Draft, 0, len(pending)+1)
	for _, id := range pending {
		out = append(out, history.Draft{Role: history.RoleTool, ToolCallID: id, Content: NotRunResult})
	}
	return append(out, draft), nil
}

func toolResultDrafts(pending []string, results []ToolResult) ([]history.Draft, error) {
	out := make([]history.Draft, 0, len(results))
	for i, r := range results {
		if !slices.Contains(pending, r.ToolCallID) {
			return nil, errs.Errorf(errs.ECONFLICT, "toolResults[%d]: tool call %q awaits no result (it is unknown, or answered already)", i, r.ToolCallID)
		}
		out = append(out, history.Draft{Role: history.RoleTool, ToolCallID: r.ToolCallID, Content: r.Content})
	}
	if len(results) < len(pending) {
		var missing []string
		for _, id := range pending {
			if !slices.ContainsFunc(results, func(r ToolResult) bool { return r.ToolCallID == id }) {
				missing = append(missing, id)
			}
		}
		return nil, errs.Errorf(errs.EINVALID, "toolResults: tool calls %s await results too; send them all at once", strings.Join(missing, ", "))
	}
	return out, nil
}
