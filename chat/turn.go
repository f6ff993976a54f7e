package chat

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// TurnRequest is one message from a signed-in user.
type TurnRequest struct {
	UserID    string
	SessionID string // empty: start a new session
	// Create: SessionID names a session the caller derived (from its own
	// chat id), created by this turn if it does not exist yet.
	Create  bool
	Message string
	// Attachments are the ids of the user's uploads the message carries.
	Attachments     []string
	ClientMessageID string // optional idempotency key
	// OnStart, if set, is called once the user's message is stored, with
	// the id the reply will have (for following its draft, or stopping it).
	OnStart func(s *sessions.Session, user history.Message, replyID string)
	// OnDelta, if set, streams the reply's text as it arrives.
	OnDelta func(string)
	// OnReply, if set, is called with the turn (or its replay) as soon as
	// its reply is stored, before the work that follows a reply: the
	// caller answers its client there.
	OnReply func(*TurnResult)
	// Regenerate, if set, is the id of a message of the session to answer
	// anew: a user message, or a reply (whose user message is answered).
	// The new reply is written beside the old one, which is kept, and the
	// conversation continues from it. Message must be empty.
	Regenerate string
	// Edit, if set, is the id of a user message of the session to send
	// anew with Message: the new message is written beside it (the same
	// parent), answered, and the conversation continues from it.
	Edit string
	// Tools are the app's functions the model may ask to call (see
	// tools.go); ToolChoice is auto (the default), none, required, or the
	// name of one of them.
	Tools      []Tool
	ToolChoice string
	// ToolResults answer the calls the session's last reply made (all of
	// them, and Message empty): the turn stores them and calls the model
	// again.
	ToolResults []ToolResult
	// AbandonTools: a Message sent while calls await their results records
	// them as not run (else that is ECONFLICT).
	AbandonTools bool
}

// TurnResult is a completed turn.
type TurnResult struct {
	Session *sessions.Session // as it is after the reply
	Tail    *history.Tail     // likewise
	Context *history.Context  // what the model was sent
	User    history.Message
	Reply   history.Message
	// Replayed is true when the turn had been completed before under the
	// same ClientMessageID and nothing new was done.
	Replayed bool

	memoryTokens int             // of the memory block the turn sent
	learn        *longterm.Batch // claimed for learning by the reply's commit
	job          *Job            // recorded by the reply's commit; nil if none was
}

// Turn runs one chat turn as one planned unit: one batched read and one
// commit before the model, one commit after it (see TurnStore). The turn
// ends at its reply: the reply's commit records the work that follows it
// (a Job: a title, learning, the index entry, a summary when due, the
// charge of their tokens), the reply is delivered (OnReply), and the job
// is handed off to the service's Runner (a server's runs it beside the
// next requests), else run by the store's trigger or the sweep, so it is
// done even if this instance stops.
//
// The user's message is stored before the model is called, and the turn
// is detached from the caller as soon as its request is read, so whenever
// the client goes away its message is kept and answered. With a
// ClientMessageID the turn is idempotent as Stripe's requests are: the
// first request claims the key in the commit that stores the message, so
// of concurrent duplicates exactly one calls the model; the others get the
// stored turn once it is complete, or ECONFLICT with a Retry-After while
// it is in progress; the same key with another message is ECONFLICT on
// every path. A retry after the model failed (or after the instance
// running the turn died and its lease ran out) takes the turn over and
// calls the model again, without storing the message twice.
//
// The story, step by step: the turn is planned, its attachments made
// parts of its message, its embedding started early when this instance
// expects one; it is claimed (the user's message stored, the session
// leased), or found complete and replayed; then answered (admitted under
// the day's spend, the prompt built, the model called) and its reply
// stored. It ends at its reply, handed off; a turn that fails after its
// claim (answering, or storing the reply) gives the lease back, here.
func (svc *Service) Turn(ctx context.Context, req TurnRequest) (*TurnResult, error) {
	after := afterTurnContext(ctx)
	ctx = context.WithoutCancel(ctx)
	plan, err := svc.planTurn(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := svc.attach(ctx, req.UserID, plan.query.SessionID, &plan.draft, "attachments"); err != nil {
		return nil, err
	}
	// The turn's own embedding (of its message) is charged with its reply.
	ctx, embeddings := WithMeter(ctx)
	recall := &recaller{}
	if plan.embedEarly {
		svc.embed(ctx, recall, plan.draft.Content) // beside the claim's read
	}
	claimed, err := svc.claimTurn(ctx, plan, recall)
	if err != nil {
		return nil, err
	}
	if res := plan.claim.replay; res != nil {
		svc.handOff(after, req, res)
		return res, nil
	}
	sent, answer, err := svc.answer(ctx, plan, claimed, recall)
	var res *TurnResult
	if err == nil {
		recall.wait() // long done: the reply came after it
		res, err = svc.storeReply(ctx, plan, claimed, sent, answer, embeddings.Tokens())
	}
	if err == nil {
		svc.handOff(after, req, res)
		return res, nil
	}
	// Answering, or storing the reply, failed: the lease goes back now.
	svc.release(ctx, plan.query, claimed, plan.claim)
	return nil, err
}

// handOff ends a turn at its reply: the reply is delivered (OnReply),
// then its job given to the service's Runner (see afterReply); a replay
// has none.
func (svc *Service) handOff(ctx context.Context, req TurnRequest, res *TurnResult) {
	if req.OnReply != nil {
		req.OnReply(res)
	}
	if res.Replayed {
		return
	}
	svc.runner().Run(ctx, afterReply{svc: svc, res: res})
}

func (svc *Service) runner() Runner {
	if svc.Runner == nil {
		return Now{}
	}
	return svc.Runner
}

// JobsReport is what a run of due jobs did.
type JobsReport struct {
	Found, Ran, Held, Failed int
}

type afterTurnKey struct{}

// WithAfterTurnContext makes the work that follows a turn's reply run in
// after (with its values: a trace, a logger) instead of the turn's own
// context, for callers that frame the turn itself (a span that ends with
// the reply).
func WithAfterTurnContext(ctx, after context.Context) context.Context {
	return context.WithValue(ctx, afterTurnKey{}, after)
}

func afterTurnContext(ctx context.Context) context.Context {
	if after, ok := ctx.Value(afterTurnKey{}).(context.Context); ok {
		return after
	}
	return ctx
}

// turnPlan is what a turn decides before it reads anything: what it
// reads, the message it sends, where it branches off, and its claim's ids.
type turnPlan struct {
	req   TurnRequest
	query TurnQuery
	draft history.Draft // the user's message (a regeneration's: the one it answers anew)
	keyed history.Draft // the message stored under the key: draft, or the first tool result
	fork  *fork         // where a regeneration or an edit branches off; nil for a plain turn
	claim *claim
	// embedEarly: this instance saw the session's turns embed their
	// message, so this one embeds it beside its first read.
	embedEarly bool
}

// answered is the model's answer as the turn stores it, with what the
// service reported of it.
type answered struct {
	draft    history.Draft
	reported *Reply
}

// planTurn checks a request and decides what its turn reads and writes:
// the session (a new one when none is named), the message, the branch a
// regeneration or an edit starts (read here), and the ids it writes.
func (svc *Service) planTurn(ctx context.Context, req TurnRequest) (*turnPlan, error) {
	plan := &turnPlan{req: req, draft: history.Draft{Role: history.RoleUser, Content: req.Message, Attachments: req.Attachments}}
	if err := svc.validate(req, plan.draft); err != nil {
		return nil, err
	}
	q := TurnQuery{UserID: req.UserID, SessionID: req.SessionID, Key: req.ClientMessageID, Day: Day(svc.now()),
		Memory: svc.Memory != nil}
	if q.SessionID == "" {
		q.SessionID, q.New = svc.newSessionID(req), true
	} else if err := sessions.CheckID(q.SessionID); err != nil {
		return nil, err
	}
	q.New = q.New || req.Create
	c := &claim{token: ids.New(), replyID: ids.New(), userID: ids.New(),
		draft: req.OnDelta != nil && svc.Drafts != nil, op: sessions.Operation{Kind: sessions.OpTurn}}
	if q.Key != "" {
		c.replyID, c.userID = history.KeyedReplyID(q.Key), "" // a keyed message is named by its key
	}
	if req.Regenerate != "" || req.Edit != "" {
		f, err := svc.planFork(ctx, req)
		if err != nil {
			return nil, err
		}
		c.op = sessions.Operation{Kind: sessions.OpEdit, Target: req.Edit}
		if f.regenerate {
			c.op = sessions.Operation{Kind: sessions.OpRegenerate, Target: req.Regenerate}
			q.AskedID, plan.draft.Content = f.target.ID, f.target.Content
		}
		plan.fork = f
	}
	plan.keyed = plan.draft
	if len(req.ToolResults) > 0 {
		c.op = sessions.Operation{Kind: sessions.OpTools, Target: resultsDigest(req.ToolResults)}
		plan.keyed = history.Draft{Role: history.RoleTool, ToolCallID: req.ToolResults[0].ToolCallID, Content: req.ToolResults[0].Content}
	}
	q.ReplyID, q.Draft = c.replyID, c.draft
	if hint := svc.hint(q.SessionID); svc.Recaller != nil && plan.draft.Content != "" && hint.Embed {
		plan.embedEarly = true
		q.Deleted = hint.All // what a recall from all sessions needs, read with the claim
	}
	plan.query, plan.claim = q, c
	return plan, nil
}

// answer admits the claimed turn under the day's spend, builds what the
// model sees and calls the model.
func (svc *Service) answer(ctx context.Context, plan *turnPlan, st *TurnState, recall *recaller) (prompt, answered, error) {
	// A claim planned from what the store kept admitted the turn under the
	// least the day's spend could be; the spend read beside its commit
	// decides, before the model is called.
	if err := admitDay(plan.claim.at, svc.Limits, st.DayTokens); err != nil {
		return prompt{}, answered{}, err
	}
	if plan.req.OnStart != nil {
		plan.req.OnStart(st.Session, plan.claim.user, plan.claim.replyID)
	}
	tools, choice := svc.toolsFor(plan.req, st.Tail)
	sent, err := svc.prompt(ctx, st, plan.claim.user, recall, svc.toolTokens(st.Session.Model, tools))
	if err != nil {
		return prompt{}, answered{}, err
	}
	mreq := svc.request(st.Session, sent.context, sent.memory)
	mreq.Tools, mreq.ToolChoice = tools, choice
	if mreq.Parts, err = svc.partContents(ctx, plan.req.UserID, mreq.Messages); err != nil {
		return prompt{}, answered{}, err
	}
	start := svc.now()
	reply, err := svc.generate(ctx, plan.req, plan.query, st, plan.claim, mreq)
	if err != nil {
		return prompt{}, answered{}, err
	}
	return sent, answered{reported: reply, draft: history.Draft{Role: history.RoleAssistant, Content: reply.Content, ToolCalls: reply.ToolCalls,
		Metadata: history.MessageMetadata{
			Model:        reply.Model,
			DurationMs:   svc.now().Sub(start).Milliseconds(),
			FinishReason: reply.FinishReason,
		}}}, nil
}

// newSessionID names the session a turn starts. A keyed turn's is derived
// from the user and the key under the server's secret, so a retry finds
// it and nobody else can name it.
func (svc *Service) newSessionID(req TurnRequest) string {
	if req.ClientMessageID == "" {
		return ids.New()
	}
	return ids.Derive(20, "session", req.UserID, req.ClientMessageID)
}
