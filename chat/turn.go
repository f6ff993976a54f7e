package chat

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// TurnRequest is one message from a signed-in user.
type TurnRequest struct {
	UserID          string
	SessionID       string // empty: start a new session
	Message         string
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
}

// Turn runs one chat turn as one planned unit: one batched read and one
// commit before the model, one commit after it (see TurnStore). Once the
// reply is stored it is delivered (OnReply), and then Turn does the work
// that follows a reply (afterTurn: a title, learning, a summary when due,
// charging their tokens) before it returns: no caller can forget it.
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
func (svc *Service) Turn(ctx context.Context, req TurnRequest) (*TurnResult, error) {
	res, err := svc.turn(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.OnReply != nil {
		req.OnReply(res)
	}
	svc.afterTurn(afterTurnContext(ctx), res)
	return res, nil
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

// turn runs a turn up to its stored reply.
func (svc *Service) turn(ctx context.Context, req TurnRequest) (*TurnResult, error) {
	draft := history.Draft{Role: history.RoleUser, Content: req.Message}
	if err := svc.validate(req, draft); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	now := svc.now()
	q := TurnQuery{UserID: req.UserID, SessionID: req.SessionID, Key: req.ClientMessageID, Day: Day(now),
		Memory: svc.Memory != nil}
	if q.SessionID == "" {
		q.SessionID, q.New = svc.newSessionID(req), true
	} else if err := sessions.CheckID(q.SessionID); err != nil {
		return nil, err
	}
	c := &claim{token: ids.New(),
		draft: req.OnDelta != nil && svc.Drafts != nil, op: sessions.Operation{Kind: sessions.OpTurn}}
	var f *fork
	if req.Regenerate != "" || req.Edit != "" {
		var err error
		if f, err = svc.planFork(ctx, req); err != nil {
			return nil, err
		}
		c.op = sessions.Operation{Kind: sessions.OpEdit, Target: req.Edit}
		if f.regenerate {
			c.op = sessions.Operation{Kind: sessions.OpRegenerate, Target: req.Regenerate}
			q.AskedID, draft.Content = f.target.ID, f.target.Content
		}
	}
	c.replyID, c.userID = ids.New(), ids.New()
	if q.Key != "" {
		c.replyID, c.userID = history.ReplyDocID(q.Key), "" // a keyed message is named by its key
	}
	q.ReplyID, q.Draft = c.replyID, c.draft
	var st *TurnState
	rec := &recaller{}
	// The turn's own embedding (of its message) is charged with its reply.
	ctx, embedMeter := WithMeter(ctx)
	if h := svc.recallHints.get(q.SessionID); svc.Finder != nil && draft.Content != "" && h.embed {
		svc.embed(ctx, rec, draft.Content) // beside the turn's first read
		q.Deleted = h.all                  // read in it too
	}
	err := svc.waitTurn(f == nil, func() (err error) {
		// A try that waited claims as of now, with a lease from now.
		now = svc.now()
		c.lease = now.Add(svc.ModelTimeout + leaseMargin)
		claim := func(st *TurnState) (*TurnWrite, error) {
			w, err := svc.claim(st, q, draft, now, f, c)
			if err == nil && w != nil && w.Session != nil { // the session as the claim writes it (a new one too)
				svc.startEmbeds(ctx, rec, w.Session, draft.Content, st.Memory.Relevance() != nil, others(st)) // beside the claim's commit
			}
			return w, err
		}
		run := func() error {
			st, err = svc.Turns.RunTurn(ctx, q, nil, claim)
			if err == errMoreSlots { // every slot read was taken: read them all
				q.Slots = slotsToRead(svc.Limits.TurnsPerMinute, true)
				st, err = svc.Turns.RunTurn(ctx, q, nil, claim)
			}
			return err
		}
		q.Slots = slotsToRead(svc.Limits.TurnsPerMinute, false)
		q.KeyOnRetry = q.AskedID == ""
		if err = run(); err != nil && q.Key != "" && q.KeyOnRetry {
			// Refused without reading the key's messages: a retry of a
			// finished turn replays it even when it would be refused now.
			q.KeyOnRetry = false
			err = run()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.replay != nil {
		return c.replay, nil
	}
	// A claim planned from what the store kept admitted the turn under the
	// least the day's spend could be; the spend read beside its commit
	// decides, before the model is called.
	if err := admitDay(now, svc.Limits, st.DayTokens); err != nil {
		svc.release(ctx, q, st, c)
		return nil, err
	}
	if req.OnStart != nil {
		req.OnStart(st.Session, c.user, c.replyID)
	}
	mem := svc.memoryFor(ctx, rec, st.Memory, st.Session.ID)
	built, err := svc.build(st.Session, st.Tail, mem)
	if err == nil {
		if text, n := svc.recallBlock(ctx, rec, st.Session, built); n > 0 {
			mem = mem.with(text, n)
			built, err = svc.build(st.Session, st.Tail, mem)
		}
	}
	if err == nil && !contains(built.Messages, c.user.Seq) {
		err = errs.Errorf(errs.EINVALID, "the message does not fit the model's context budget of %d tokens", built.Budget)
	}
	var reply *Reply
	start := svc.now()
	if err == nil {
		reply, err = svc.generate(ctx, req, q, st, c, svc.request(st.Session, built, mem))
	}
	if err != nil {
		svc.release(ctx, q, st, c)
		return nil, err
	}
	answer := history.Draft{Role: history.RoleAssistant, Content: reply.Content, Metadata: history.MessageMetadata{
		Model:        reply.Model,
		DurationMs:   svc.now().Sub(start).Milliseconds(),
		FinishReason: reply.FinishReason,
	}}
	if rec.embedded != nil {
		<-rec.embedded // long done: the reply came after it
	}
	spent := embedMeter.Tokens()
	var out history.Message
	var learn *longterm.Batch
	done, err := svc.Turns.RunTurn(ctx, q, c.latest(st), func(st *TurnState) (*TurnWrite, error) {
		return svc.finish(st, q, c, answer, reply, spent, built, svc.now(), &out, &learn)
	})
	if err != nil {
		// Whether or not the reply was stored, the turn gives its lease
		// back (if the reply was stored, the lease went with it): a retry
		// then replays the reply or answers anew, never waits on nobody.
		svc.release(ctx, q, st, c)
		return nil, err
	}
	return &TurnResult{Session: done.Session, Tail: done.Tail, Context: built, User: c.user, Reply: out,
		memoryTokens: mem.tokens, learn: learn}, nil
}

// finish plans the commit that finishes a turn: the reply (whose parent is
// always the message it answers), the session's counters and context
// (with the learning watermark, when a batch is due), the lease given
// back, and the tokens spent: the reply's (as reported), and spent
// besides (embeddings), counted on the session too.
func (svc *Service) finish(st *TurnState, q TurnQuery, c *claim, answer history.Draft, reported *Reply, spent int, sent *history.Context, now time.Time, out *history.Message, learn **longterm.Batch) (*TurnWrite, error) {
	if st.Answer != nil {
		if st.Answer.ParentSeq != c.user.Seq { // not this turn's: the key named another operation
			return nil, errs.Errorf(errs.ECONFLICT, "clientMessageId %q was already used for another request", q.Key)
		}
		// Stored already: this commit landed, but its answer was lost.
		*out, *learn = *st.Answer, nil
		return nil, nil
	}
	s := st.Session.Clone()
	if err := s.CheckOwner(q.UserID); err != nil {
		return nil, err
	}
	if !c.holds(s) {
		if a := s.AnsweringAt(now); a != nil {
			return nil, sessions.InProgress(now, a, "another request took this turn over; retry to get its reply")
		}
	}
	s.Answering = nil
	// A reply continues the active branch when that ends at its question.
	// If the user switched branches meanwhile, it is stored under its
	// question all the same, and the branch shown stays shown.
	leaf, pending := s.Leaf(), s.PendingToolCalls
	away := leaf != c.user.Seq
	if away {
		s.SetLeaf(c.user.Seq)
	}
	reply, t, err := svc.History.AppendOne(s, st.Tail, "", c.replyID, answer)
	if err != nil {
		return nil, err
	}
	if q.Key != "" {
		reply.Op = c.op
	}
	if away {
		s.SetLeaf(leaf)
		s.PendingToolCalls, t = pending, nil // the context stays that of the branch shown
	}
	msgs := []history.Message{reply}
	*out, *learn = reply, nil
	if svc.Memory != nil {
		if b, ok := svc.Memory.Claim(s); ok {
			b.Have = st.Tail.Messages // the latest messages: usually the whole batch
			if t != nil {
				b.Have = t.Messages
			}
			b.User = st.Memory.Source
			*learn = &b
		}
	}
	prompt, completion := reported.PromptTokens, reported.CompletionTokens
	if prompt+completion == 0 { // the service did not report usage: use our own counts
		prompt, completion = sent.Tokens, msgs[0].Tokens
	}
	spent += prompt + completion
	s.Usage.PromptTokens += prompt
	s.Usage.CompletionTokens += completion
	s.Usage.Turns++
	s.Usage.LastModel = answer.Metadata.Model
	if svc.Recall != nil {
		// The exchange is embedded after the reply (afterTurn); its tokens
		// are charged here, as counted for the two messages, so that
		// embedding adds no write of its own.
		spent += c.user.Tokens + msgs[0].Tokens
	}
	return &TurnWrite{Session: s, Tail: t, Messages: msgs, Slot: NoSlot, Tokens: spent, Draft: c.endDraft(st),
		ByModel: map[string]int{cmp.Or(answer.Metadata.Model, s.Model): prompt + completion}}, nil
}

// releaseTries is how often giving a failed turn back is tried.
const releaseTries = 5

// release gives a failed turn's lease back at once, so that a retry need
// not wait for it to run out, and ends its draft. If the lease moved on
// meanwhile (it ran out and another request took it), it leaves it. It
// tries a few times: a lease left behind makes every retry wait for
// nobody until it runs out.
func (svc *Service) release(ctx context.Context, q TurnQuery, st *TurnState, c *claim) {
	prev := c.latest(st)
	var err error
	for i := range releaseTries {
		_, err = svc.Turns.RunTurn(ctx, q, prev, func(st *TurnState) (*TurnWrite, error) {
			w := &TurnWrite{Slot: NoSlot, Draft: c.endDraft(st)}
			if c.holds(st.Session) {
				w.Session = st.Session.Clone()
				w.Session.Answering = nil
			}
			if w.Session == nil && w.Draft == nil {
				return nil, nil
			}
			return w, nil
		})
		if err == nil || errs.CodeOf(err) != errs.EUNAVAILABLE {
			break
		}
		prev = nil // read afresh
		time.Sleep(time.Duration(50<<i) * time.Millisecond)
	}
	if err != nil {
		svc.logError(ctx, "releasing a failed turn failed", q.SessionID, err)
	}
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

// newSessionID names the session a turn starts. A keyed turn's is derived
// from the user and the key under the server's secret, so a retry finds
// it and nobody else can name it.
func (svc *Service) newSessionID(req TurnRequest) string {
	if req.ClientMessageID == "" {
		return ids.New()
	}
	return ids.Derive(20, "session", req.UserID, req.ClientMessageID)
}

func contains(msgs []history.Message, seq int) bool {
	for _, m := range msgs {
		if m.Seq == seq {
			return true
		}
	}
	return false
}
