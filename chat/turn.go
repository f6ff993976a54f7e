// Package chat runs one chat turn: it stores the user's message, builds what
// the model sees, calls the model and stores the reply, within per-user
// limits that protect the bill. It knows nothing of HTTP or of which model
// service answers.
package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// Model is the chat model a turn calls.
type Model interface {
	// Generate answers req. With onDelta set, it streams: onDelta receives
	// each piece of the reply's text as it arrives.
	Generate(ctx context.Context, req Request, onDelta func(string)) (*Reply, error)
}

// Request is what the model is asked.
type Request struct {
	Model    string
	System   string
	Memory   string // the user's long-term memory block, sent as a second system message
	Messages []history.Message
}

// Reply is the model's answer.
type Reply struct {
	Content          string
	Model            string
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
}

// Titler names a conversation from its first exchange.
type Titler interface {
	Title(ctx context.Context, model, user, reply string) (string, error)
}

// Memory is the user's long-term memory as a turn uses it (its block is
// read with the turn, see TurnQuery.Memory).
type Memory interface {
	// Claim moves the learning watermark of s past its new messages when
	// enough have accumulated (a turn stores s in the commit of its
	// reply) and returns the batch to learn from.
	Claim(s *sessions.Session) (longterm.Batch, bool)
	// LearnClaimed extracts memory from a claimed batch.
	LearnClaimed(ctx context.Context, s *sessions.Session, model string, b longterm.Batch) error
}

// Service runs chat turns.
type Service struct {
	Memory Memory // nil: no long-term memory
	Turns  TurnStore
	Drafts Drafts // nil: no drafts, no stopping
	// DraftInterval is how often a streaming reply's draft is written;
	// 0: DefaultDraftInterval.
	DraftInterval time.Duration
	Sessions      *sessions.Service
	History       *history.Service
	Model         Model
	Titler        Titler
	Usage         UsageRepo
	Limits        Limits
	SystemPrompt  string
	// AllowSystemMessages lets clients append messages with role system,
	// which reach the model as instructions beside SystemPrompt. Off, only
	// the server speaks as system: a signed-in user is not trusted to
	// instruct the model over the operator's prompt.
	AllowSystemMessages bool
	ModelTimeout        time.Duration
	// BusyWait is how long a turn or an append waits while another
	// message of its session is answered; 0: DefaultBusyWait.
	BusyWait time.Duration
	Now      func() time.Time
	Log      *slog.Logger

	systemTokens sync.Map // model → tokens of SystemPrompt, counted once
}

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
// commit before the model, one commit after it (see TurnStore).
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
	draft := history.Draft{Role: history.RoleUser, Content: req.Message}
	if err := svc.validate(req, draft); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	now := svc.now()
	q := TurnQuery{UserID: req.UserID, SessionID: req.SessionID, Key: req.ClientMessageID, Day: Day(now),
		Slots: svc.Limits.TurnsPerMinute, Memory: svc.Memory != nil}
	if q.SessionID == "" {
		q.SessionID, q.New = svc.newSessionID(req), true
	} else if err := sessions.CheckID(q.SessionID); err != nil {
		return nil, err
	}
	c := &claim{token: ids.New(), lease: now.Add(svc.ModelTimeout + leaseMargin),
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
	err := svc.waitTurn(f == nil, func() (err error) {
		st, err = svc.Turns.RunTurn(ctx, q, nil, func(st *TurnState) (*TurnWrite, error) {
			return svc.claim(st, q, draft, now, f, c)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.replay != nil {
		return c.replay, nil
	}
	if req.OnStart != nil {
		req.OnStart(st.Session, c.user, c.replyID)
	}
	mem := blockOf(st.Memory)
	built, err := svc.build(st.Session, st.Tail, mem)
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
	spent := reply.PromptTokens + reply.CompletionTokens
	var out history.Message
	var learn *longterm.Batch
	done, err := svc.Turns.RunTurn(ctx, q, c.latest(st), func(st *TurnState) (*TurnWrite, error) {
		return svc.finish(st, q, c, answer, spent, built, svc.now(), &out, &learn)
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

// claim is what claiming a turn decided.
type claim struct {
	// Decided once per request, before anything is read: a plan that runs
	// again (its commit raced another, or its answer was lost) writes the
	// same ids and the same lease, and knows its own claim by token.
	token   string
	op      sessions.Operation
	replyID string
	userID  string // the new user message's id; "" for a keyed one
	lease   time.Time
	draft   bool // the reply streams through a draft

	user   history.Message
	replay *TurnResult // the turn was complete already
	// draftVersion is the store's record of the draft's last write.
	draftVersion any
}

// latest is st with the draft as this turn last wrote it.
func (c *claim) latest(st *TurnState) *TurnState {
	if !c.draft || c.draftVersion == nil {
		return st
	}
	cp := *st
	cp.DraftVersion = c.draftVersion
	return &cp
}

// StoppedReason is the finishReason of a reply stopped by its user.
const StoppedReason = "stopped"

// DefaultDraftInterval is how often a streaming reply's draft is written.
const DefaultDraftInterval = time.Second

// generate calls the model. A streaming reply is followed by a draft: its
// partial text is written every DraftInterval (a heartbeat, too), and a
// stop requested through it cancels the call and keeps what was said.
func (svc *Service) generate(ctx context.Context, req TurnRequest, q TurnQuery, st *TurnState, c *claim, mreq Request) (*Reply, error) {
	mctx, cancel := context.WithTimeout(ctx, svc.ModelTimeout)
	defer cancel()
	onDelta := req.OnDelta
	var mu sync.Mutex
	var partial strings.Builder
	var stopped atomic.Bool
	done := make(chan struct{})
	var follow sync.WaitGroup
	d := &Draft{SessionID: q.SessionID, ReplyID: c.replyID, UserID: q.UserID}
	if c.draft {
		onDelta = func(text string) {
			mu.Lock()
			partial.WriteString(text)
			mu.Unlock()
			req.OnDelta(text)
		}
		d.Version = st.DraftVersion
		interval := svc.DraftInterval
		if interval <= 0 {
			interval = DefaultDraftInterval
		}
		follow.Add(1)
		go func() {
			defer follow.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				mu.Lock()
				d.Text = partial.String()
				mu.Unlock()
				stop, err := svc.Drafts.SaveDraft(ctx, d)
				if errors.Is(err, ErrDraftTaken) {
					return // a later streaming turn of the session has the draft
				}
				if err != nil {
					svc.logError(ctx, "saving a draft failed", q.SessionID, err)
					continue
				}
				if stop {
					stopped.Store(true)
					cancel()
					return
				}
			}
		}()
	}
	reply, err := svc.Model.Generate(mctx, mreq, onDelta)
	close(done)
	follow.Wait()
	if c.draft {
		c.draftVersion = d.Version
	}
	if stopped.Load() {
		text := partial.String()
		if text == "" {
			return nil, errs.Errorf(errs.ECONFLICT, "the reply was stopped before any of it arrived; your message is saved")
		}
		return &Reply{Content: text, Model: mreq.Model, FinishReason: StoppedReason}, nil
	}
	if err == nil && reply.Content == "" {
		err = errEmptyReply
	}
	if err != nil {
		return nil, errs.Wrap(errs.EUPSTREAM, err, "the model did not answer; your message is saved, retry with the same clientMessageId")
	}
	return reply, nil
}

// Stop asks the streaming reply replyID of the caller's session to stop,
// whichever instance runs it. The reply is stored with what it said so far
// and finishReason "stopped". ENOTFOUND if no such reply is in progress.
func (svc *Service) Stop(ctx context.Context, userID, sessionID, replyID string) error {
	if err := sessions.CheckID(sessionID); err != nil {
		return err
	}
	if err := sessions.CheckID(replyID); err != nil {
		return err
	}
	if svc.Drafts == nil {
		return errs.Errorf(errs.ENOTFOUND, "no reply in progress can be stopped here")
	}
	return svc.Drafts.RequestStop(ctx, userID, sessionID, replyID)
}

// leaseMargin is how much longer than the model may take a turn holds the
// session's answering lease: past it, another request may take over.
const leaseMargin = 15 * time.Second

// claim plans the commit that claims a turn on the state read: it checks
// the session and the key, admits the turn under the user's limits, and
// appends the user's message (or, answering a stored message, only takes
// the lease), with the session's answering lease in the same commit.
func (svc *Service) claim(st *TurnState, q TurnQuery, draft history.Draft, now time.Time, f *fork, c *claim) (*TurnWrite, error) {
	c.user, c.replay = history.Message{}, nil
	s := st.Session
	if s == nil {
		if !q.New {
			return nil, sessions.NotFound(q.SessionID)
		}
		var err error
		if s, err = svc.Sessions.New(q.UserID, sessions.CreateInput{ID: q.SessionID}); err != nil {
			return nil, err
		}
	} else {
		s = s.Clone()
		if err := s.CheckOwner(q.UserID); err != nil {
			return nil, err
		}
	}
	if a := s.Answering; a != nil && a.Token == c.token {
		// This request's claim is stored: its commit landed, but the
		// answer was lost on the way. Carry on from what it wrote.
		return nil, c.claimed(st, a.Seq)
	}
	if err := c.checkKey(st, q, s, draft, now); err != nil || c.replay != nil {
		return nil, err
	}
	if a := s.AnsweringAt(now); a != nil && q.Key != "" && a.Key == q.Key {
		return nil, sessions.InProgress(now, a, "the request with clientMessageId %q is in progress; retry to get its reply", q.Key)
	}
	if err := s.CheckNotAnswering(now); err != nil {
		return nil, err
	}
	if f != nil && f.regenerate && st.Asked == nil {
		return nil, errs.Errorf(errs.ENOTFOUND, "message %s not found", q.AskedID)
	}
	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	slot, err := AdmitTurn(now, svc.Limits, st.DayTokens, st.Slots, rand.IntN)
	if err != nil {
		return nil, err
	}
	w := &TurnWrite{Session: s, Slot: slot, Minute: now.Unix() / 60}
	if st.Asked != nil { // answer a stored message: a regeneration, or a retry taking a failed turn over
		c.user = *st.Asked
		if f != nil && f.regenerate { // answer it on its own branch
			w.Tail = svc.History.ForkTail(s, f.base, f.leaf)
		}
	} else {
		tail := st.Tail
		if f != nil { // an edit: the new message's parent is the edited one's
			tail = svc.History.ForkTail(s, f.base, f.leaf)
		}
		m, t, err := svc.History.AppendOne(s, tail, q.Key, c.userID, draft)
		if err != nil {
			return nil, err
		}
		if q.Key != "" {
			m.Op = c.op
		}
		c.user = m
		w.Tail, w.Messages = t, []history.Message{m}
	}
	s.Answering = &sessions.Answering{Seq: c.user.Seq, ReplyID: c.replyID, Key: q.Key, Op: c.op, Token: c.token, Until: c.lease}
	w.Draft = c.startDraft()
	return w, nil
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

// opOf is the operation a keyed message was stored by.
func opOf(m *history.Message) sessions.Operation {
	if m.Op.Kind == "" {
		return sessions.Operation{Kind: sessions.OpTurn}
	}
	return m.Op
}

// checkKey holds a key to one operation on one session, as Stripe's
// idempotency keys: reused with another kind of request, another target
// or another message, it is ECONFLICT; reused with the same request that
// is complete, it replays it (c.replay).
func (c *claim) checkKey(st *TurnState, q TurnQuery, s *sessions.Session, draft history.Draft, now time.Time) error {
	if q.Key == "" {
		return nil
	}
	reused := errs.Errorf(errs.ECONFLICT, "clientMessageId %q was already used for another request", q.Key)
	switch {
	case c.op.Kind == sessions.OpRegenerate && st.KeyUsed:
		return reused // the key stored a message: it named a turn or an edit
	case c.op.Kind != sessions.OpRegenerate && st.Asked != nil && (opOf(st.Asked) != c.op || !st.Asked.SameContent(&draft)):
		return reused
	}
	if a := s.AnsweringAt(now); a != nil && a.Key == q.Key && a.Op != c.op {
		return reused
	}
	if st.Answer == nil {
		return nil
	}
	if opOf(st.Answer) != c.op || st.Asked == nil {
		return reused
	}
	c.replay = &TurnResult{Session: s, User: *st.Asked, Reply: *st.Answer, Replayed: true}
	return nil
}

// startDraft is the draft a streaming turn starts in its claim.
func (c *claim) startDraft() *DraftWrite {
	if !c.draft {
		return nil
	}
	return &DraftWrite{ReplyID: c.replyID, UserMessageID: c.user.ID, Create: true}
}

// endDraft is the deletion of a streaming turn's draft, once its reply is
// stored or it failed, if the session's draft is still this turn's.
func (c *claim) endDraft(st *TurnState) *DraftWrite {
	if !c.draft || st.DraftReplyID != c.replyID {
		return nil
	}
	return &DraftWrite{ReplyID: c.replyID}
}

// holds reports whether s's answering lease is this request's.
func (c *claim) holds(s *sessions.Session) bool {
	return s != nil && s.Answering != nil && s.Answering.Token == c.token
}

// finish plans the commit that finishes a turn: the reply (whose parent is
// always the message it answers), the session's counters and context
// (with the learning watermark, when a batch is due), the lease given
// back, and the tokens spent.
func (svc *Service) finish(st *TurnState, q TurnQuery, c *claim, answer history.Draft, spent int, sent *history.Context, now time.Time, out *history.Message, learn **longterm.Batch) (*TurnWrite, error) {
	if st.Answer != nil {
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
			*learn = &b
		}
	}
	if spent == 0 { // the service did not report usage: use our own counts
		spent = sent.Tokens + msgs[0].Tokens
	}
	return &TurnWrite{Session: s, Tail: t, Messages: msgs, Slot: NoSlot, Tokens: spent, Draft: c.endDraft(st)}, nil
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
		d := min(25*time.Millisecond<<min(i, 5), 500*time.Millisecond)
		time.Sleep(d/2 + rand.N(d/2+1))
	}
}

// newSessionID names the session a turn starts. A keyed turn's is derived
// from the key, so a retry finds it.
func (svc *Service) newSessionID(req TurnRequest) string {
	if req.ClientMessageID == "" {
		return ids.New()
	}
	h := sha256.Sum256([]byte(req.UserID + "\x00" + req.ClientMessageID))
	return hex.EncodeToString(h[:10])
}

func contains(msgs []history.Message, seq int) bool {
	for _, m := range msgs {
		if m.Seq == seq {
			return true
		}
	}
	return false
}

// fixed returns the tokens of the system prompt for model, counted once.
func (svc *Service) fixed(model string) int {
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

// memoryBlock is a user's long-term memory block and its tokens.
type memoryBlock struct {
	text   string
	tokens int
}

// systemMessageTokens is what wrapping a text in a system message adds.
const systemMessageTokens = 4

// blockOf is the memory block a turn sends, as a system message.
func blockOf(m MemoryBlock) memoryBlock {
	if m.Text == "" {
		return memoryBlock{}
	}
	return memoryBlock{text: m.Text, tokens: m.Tokens + systemMessageTokens}
}

// build chooses the session's context from its tail: no reads, no
// tokenizing of stored messages.
func (svc *Service) build(s *sessions.Session, t *history.Tail, mem memoryBlock) (*history.Context, error) {
	return history.Build(s, t, svc.History.BudgetFor(s), svc.fixed(s.Model)+mem.tokens)
}

// request is what the model is sent for a built context: the system prompt,
// the memory block, the summary in use as a system message, then the
// messages verbatim.
func (svc *Service) request(s *sessions.Session, c *history.Context, mem memoryBlock) Request {
	msgs := c.Messages
	if c.Compaction != nil {
		msgs = append([]history.Message{history.SummaryMessage(c.Compaction)}, msgs...)
	}
	return Request{Model: s.Model, System: svc.SystemPrompt, Memory: mem.text, Messages: msgs}
}

// Preview is what the next turn of a session would send the model.
type Preview struct {
	Context *history.Context
	Request Request
}

// Preview returns the caller's session's next context, read in one round
// trip (the session, its context and the memory block together) whatever
// the length of the session.
func (svc *Service) Preview(ctx context.Context, userID, sessionID string) (*Preview, error) {
	if err := sessions.CheckID(sessionID); err != nil {
		return nil, err
	}
	q := TurnQuery{UserID: userID, SessionID: sessionID, Day: Day(svc.now()), Memory: svc.Memory != nil}
	st, err := svc.Turns.RunTurn(ctx, q, nil, func(*TurnState) (*TurnWrite, error) { return nil, nil })
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
	c, err := svc.build(st.Session, st.Tail, mem)
	if err != nil {
		return nil, err
	}
	return &Preview{Context: c, Request: svc.request(st.Session, c, mem)}, nil
}

// MaxTitleChars is the longest generated title kept.
const MaxTitleChars = 60

// AfterTurn does what must not delay the reply: it names the session after
// its first exchange (unless its user named it), learns long-term memory
// and folds old messages into the summary when the session needs it, and
// charges the model tokens of all that to the user (through a Metered
// model). Failures are logged; the next turn tries again.
func (svc *Service) AfterTurn(ctx context.Context, res *TurnResult) {
	if res == nil || res.Replayed {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	ctx, meter := WithMeter(ctx)
	// This work's model tokens count against the user's day like the turn's.
	defer func() { svc.addTokens(ctx, res.Session.UserID, meter.Tokens()) }()
	s := res.Session
	if s.TitleSource == sessions.TitleDefault && svc.Titler != nil {
		if err := svc.title(ctx, s, res); err != nil {
			svc.logError(ctx, "title generation failed", s.ID, err)
		}
	}
	if svc.Memory != nil && res.learn != nil {
		err := svc.Memory.LearnClaimed(ctx, s, s.Model, *res.learn)
		// Preconditions (nothing learned, opted out) are outcomes.
		if err != nil && errs.CodeOf(err) != errs.EPRECONDITION {
			svc.logError(ctx, "learning long-term memory failed", s.ID, err)
		}
	}
	fixed := svc.fixed(s.Model) + res.memoryTokens // as the turn counted it
	if _, ok := history.PlanCompaction(s, res.Tail, svc.History.BudgetFor(s), fixed); ok {
		_, err := svc.History.Compact(ctx, s.ID, fixed)
		if err != nil && !errors.Is(err, history.ErrNothingToCompact) && !errors.Is(err, history.ErrCompactionBusy) {
			svc.logError(ctx, "compaction failed", s.ID, err)
		}
	}
}

func (svc *Service) title(ctx context.Context, s *sessions.Session, res *TurnResult) error {
	title, err := svc.Titler.Title(ctx, s.Model, res.User.Content, res.Reply.Content)
	if err != nil {
		return err
	}
	if title = CleanTitle(title); title == "" {
		return errors.New("the model proposed an empty title")
	}
	_, err = svc.Sessions.SetGeneratedTitle(ctx, s.ID, title)
	return err
}

// CleanTitle makes a model's proposal a title: one line, no quotes, at most
// MaxTitleChars characters, cut at a word boundary.
func CleanTitle(t string) string {
	t, _, _ = strings.Cut(strings.TrimSpace(t), "\n")
	t = strings.Trim(strings.TrimSpace(t), "\"'`*#. ")
	t = strings.TrimPrefix(t, "Title: ")
	r := []rune(t)
	if len(r) <= MaxTitleChars {
		return t
	}
	cut := string(r[:MaxTitleChars])
	if i := strings.LastIndex(cut, " "); i > MaxTitleChars/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:-") + "…"
}

func (svc *Service) logError(ctx context.Context, msg, sessionID string, err error) {
	if svc.Log != nil {
		svc.Log.ErrorContext(ctx, msg, "sessionId", sessionID, "error", err.Error())
	}
}

type upstreamError string

func (e upstreamError) Error() string { return string(e) }

const errEmptyReply = upstreamError("the model returned an empty reply")

func (svc *Service) now() time.Time { return clock.Stored(svc.Now) }

// addTokens records n tokens against the user's daily limit. What they
// paid for is stored already, so a failure here is logged, not returned.
func (svc *Service) addTokens(ctx context.Context, userID string, n int) {
	if n <= 0 {
		return
	}
	err := svc.Usage.AddTokens(ctx, userID, Day(svc.now()), n)
	if err != nil && svc.Log != nil {
		svc.Log.ErrorContext(ctx, "recording token usage failed", "code", string(errs.CodeOf(err)))
	}
}

// Append stores messages the client composed itself (its own tool loop,
// or an imported conversation) as the next messages of the caller's
// session, under the same per-user limits as turns: the batch counts
// against the messages a minute, is refused once the day's tokens are
// spent, and its tokens count against the day (later turns send them to
// the model). A retry under the same key returns the stored batch and
// is not charged again.
func (svc *Service) Append(ctx context.Context, userID, sessionID, key string, drafts []history.Draft) ([]history.Message, error) {
	if err := history.Validate(key, drafts...); err != nil {
		return nil, err
	}
	if !svc.AllowSystemMessages {
		for i, d := range drafts {
			if d.Role == history.RoleSystem {
				return nil, errs.Errorf(errs.EINVALID, "messages[%d].role: system messages come from the server only (the operator can allow them with CLIENT_SYSTEM_MESSAGES=on)", i)
			}
		}
	}
	s, err := svc.Sessions.Get(ctx, userID, sessionID)
	if err != nil {
		return nil, err
	}
	now := svc.now()
	if err := svc.Usage.UpdateUsage(ctx, userID, Day(now), func(u *Usage) error {
		return u.AdmitMessages(now, svc.Limits, len(drafts))
	}); err != nil {
		return nil, err
	}
	var a *history.Appended
	err = svc.waitTurn(true, func() (err error) {
		a, err = svc.History.AppendAll(ctx, s, key, drafts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !a.Replayed {
		n := 0
		for _, m := range a.Messages {
			n += m.Tokens
		}
		svc.addTokens(ctx, userID, n)
	}
	return a.Messages, nil
}

// validate checks a turn request before anything is read.
func (svc *Service) validate(req TurnRequest, draft history.Draft) error {
	switch {
	case req.Regenerate != "" && req.Edit != "":
		return errs.Errorf(errs.EINVALID, "a turn either regenerates a reply or edits a message, not both")
	case (req.Regenerate != "" || req.Edit != "") && req.SessionID == "":
		return errs.Errorf(errs.EINVALID, "sessionId is required to regenerate or edit")
	case req.Regenerate != "":
		if req.Message != "" {
			return errs.Errorf(errs.EINVALID, "a regeneration sends no message: it answers the stored one again")
		}
		if err := sessions.CheckID(req.Regenerate); err != nil {
			return err
		}
		return history.ValidateKey(req.ClientMessageID)
	case req.Edit != "":
		if err := sessions.CheckID(req.Edit); err != nil {
			return err
		}
	}
	return history.Validate(req.ClientMessageID, draft)
}

// fork is where a regeneration or an edit branches off.
type fork struct {
	regenerate bool
	target     history.Message // the user message answered anew, or edited
	leaf       int             // the message the new branch continues
	base       *history.Tail   // that branch's tail (history.BranchTail)
}

// planFork reads what a regeneration or an edit branches from: its target
// message and the tail of the branch it continues. Messages and their
// parents never change, so what it reads stays true while the turn runs.
// It costs a read of the session and the target, and the reads of
// BranchTail; a turn that does not branch reads none of it.
func (svc *Service) planFork(ctx context.Context, req TurnRequest) (*fork, error) {
	f := &fork{regenerate: req.Regenerate != ""}
	id := req.Edit
	if f.regenerate {
		id = req.Regenerate
	}
	q := TurnQuery{UserID: req.UserID, SessionID: req.SessionID, AskedID: id, Day: Day(svc.now())}
	st, err := svc.Turns.RunTurn(ctx, q, nil, func(*TurnState) (*TurnWrite, error) { return nil, nil })
	if err != nil {
		return nil, err
	}
	if st.Session == nil {
		return nil, sessions.NotFound(req.SessionID)
	}
	s := st.Session
	if err := s.CheckOwner(req.UserID); err != nil {
		return nil, err
	}
	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	if st.Asked == nil {
		return nil, errs.Errorf(errs.ENOTFOUND, "message %s not found in this session", id)
	}
	target := *st.Asked
	if f.regenerate && target.Role == history.RoleAssistant {
		// Regenerating a reply answers its user message anew.
		parent := s.Parent(target.Seq)
		var msgs []history.Message
		if parent >= 0 {
			if msgs, err = svc.History.Repo.MessageRange(ctx, s.ID, parent, parent); err != nil {
				return nil, err
			}
		}
		if len(msgs) != 1 || msgs[0].Role != history.RoleUser {
			return nil, errs.Errorf(errs.EINVALID, "message %s does not answer a user message, so it cannot be regenerated", id)
		}
		target = msgs[0]
	}
	if target.Role != history.RoleUser {
		return nil, errs.Errorf(errs.EINVALID, "message %s is not a user message or a reply to one", id)
	}
	f.target, f.leaf = target, target.Seq
	if !f.regenerate {
		f.leaf = s.Parent(target.Seq)
	}
	if f.base, err = svc.History.BranchTail(ctx, s, f.leaf); err != nil {
		return nil, err
	}
	return f, nil
}
