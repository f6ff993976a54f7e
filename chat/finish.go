package chat

import (
	"cmp"
	"context"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// finished is what the commit that finishes a turn writes, with the reply
// it stores and the batch it claims for learning.
type finished struct {
	write *TurnWrite
	reply history.Message
	learn *longterm.Batch
	// summarize: a summary falls due with the reply, for its job to make.
	summarize bool
}

// storeReply stores the reply in the commit that finishes the turn (see
// finish). Whether or not the reply was stored when that fails, the turn
// gives its lease back (turn; if the reply was stored, the lease went
// with it): a retry then replays the reply or answers anew, never waits
// on nobody.
func (svc *Service) storeReply(ctx context.Context, plan *turnPlan, st *TurnState, sent prompt, answer answered, spent int) (*TurnResult, error) {
	var fin finished
	done, err := svc.Turns.RunTurn(ctx, plan.query, plan.claim.latest(st), func(st *TurnState) (*TurnWrite, error) {
		var err error
		fin, err = svc.finish(st, plan, answer, spent, sent)
		if err == nil && fin.write != nil {
			fin.write.Job = svc.newJob(plan, fin, sent.memory.tokens)
		}
		return fin.write, err
	})
	if err != nil {
		return nil, err
	}
	res := &TurnResult{Session: done.Session, Tail: done.Tail, Context: sent.context, User: plan.claim.user, Reply: fin.reply,
		memoryTokens: sent.memory.tokens, learn: fin.learn}
	if fin.write != nil { // the commit landed now: its job is the turn's to run
		res.job = fin.write.Job
	}
	return res, nil
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
				w.Session.Bookkeeping.Answering = nil
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

// finish plans the commit that finishes a turn: the reply (whose parent is
// always the message it answers), the session's counters and context
// (with the learning watermark, when a batch is due), the lease given
// back, and the tokens spent: the reply's (as reported, else as counted
// for the context sent and the reply), and spent besides (embeddings),
// counted on the session too. It tells whether a summary falls due.
func (svc *Service) finish(st *TurnState, plan *turnPlan, answer answered, spent int, sent prompt) (finished, error) {
	c, q := plan.claim, plan.query
	if st.Answer != nil {
		if st.Answer.ParentSeq != c.user.Seq { // not this turn's: the key named another operation
			return finished{}, errs.Errorf(errs.ECONFLICT, "clientMessageId %q was already used for another request", q.Key)
		}
		// Stored already: this commit landed, but its answer was lost.
		return finished{reply: *st.Answer}, nil
	}
	// The session as this commit writes it, its reply under its question
	// whichever branch is shown (appendReply shows that one again).
	s, shown := st.Session.Clone(), st.Session.Leaf()
	s.SetLeaf(c.user.Seq)
	if err := s.CheckOwner(q.UserID); err != nil {
		return finished{}, err
	}
	now := svc.now()
	if a := s.AnsweringAt(now); a != nil && !c.holds(s) {
		return finished{}, sessions.InProgress(now, a, "another request took this turn over; retry to get its reply")
	}
	s.Bookkeeping.Answering = nil
	reply, t, err := svc.appendReply(s, shown, st.Tail, c, answer.draft)
	if err != nil {
		return finished{}, err
	}
	// Due against the request as the turn counted it besides the history;
	// without the tail at hand, the job plans it from what is stored.
	fin := finished{reply: reply, summarize: t == nil}
	if t != nil {
		_, fin.summarize = history.PlanCompaction(s, t, svc.History.BudgetFor(s), sent.fixed+sent.memory.tokens)
	}
	if q.Key != "" {
		fin.reply.Op = c.op
	}
	fin.learn = svc.claimLearning(s, st, t)
	used := replyTokens(answer.reported, sent.context, reply)
	spent += used.Total()
	s.Usage.PromptTokens += used.Input
	s.Usage.CachedTokens += used.Cached
	s.Usage.CompletionTokens += used.Output
	s.Usage.Turns++
	s.Usage.LastModel = answer.draft.Metadata.Model
	if svc.Indexer != nil {
		// The exchange is embedded after the reply (afterTurn); its tokens
		// are charged here, as counted for the two messages, so that
		// embedding adds no write of its own.
		spent += c.user.Tokens + reply.Tokens
	}
	fin.write = &TurnWrite{Session: s, Tail: t, Messages: []history.Message{fin.reply}, Slot: NoSlot, Tokens: spent, Draft: c.endDraft(st),
		ByModel: map[string]ModelTokens{cmp.Or(answer.draft.Metadata.Model, s.Model): used}}
	return fin, nil
}

// appendReply appends the reply to s, whose active branch ends at the
// message it answers. A reply continues the active branch shown, when
// that ends at its question. If the user switched branches meanwhile, it
// is stored under its question all the same, and the branch shown stays
// shown (with its context: the tail returned is then nil).
func (svc *Service) appendReply(s *sessions.Session, shown int, tail *history.Tail, c *claim, answer history.Draft) (history.Message, *history.Tail, error) {
	pending := s.Bookkeeping.PendingToolCalls
	reply, t, err := svc.History.AppendOne(s, tail, "", c.replyID, answer)
	if err != nil {
		return history.Message{}, nil, err
	}
	if shown != c.user.Seq {
		s.SetLeaf(shown)
		s.Bookkeeping.PendingToolCalls, t = pending, nil
	}
	return reply, t, nil
}

// claimLearning moves s's learning watermark past its new messages when a
// batch is due, and returns the batch (nil if none): the latest messages,
// t's when the reply's commit writes a tail, else those read.
func (svc *Service) claimLearning(s *sessions.Session, st *TurnState, t *history.Tail) *longterm.Batch {
	if svc.Memory == nil {
		return nil
	}
	b, ok := svc.Memory.Claim(s)
	if !ok {
		return nil
	}
	b.Have = st.Tail.Messages // usually the whole batch
	if t != nil {
		b.Have = t.Messages
	}
	b.User = st.Memory.Source
	return &b
}

// replyTokens is what a reply cost, its prompt (and the part of it served
// from the provider's cache) and its completion: as the service reported
// them, else as counted for the context sent and the reply (none cached).
func replyTokens(reported *Reply, sent *history.Context, reply history.Message) ModelTokens {
	if reported.PromptTokens+reported.CompletionTokens == 0 {
		return ModelTokens{Input: sent.Tokens, Output: reply.Tokens}
	}
	cached := min(max(reported.CachedTokens, 0), reported.PromptTokens)
	return ModelTokens{Input: reported.PromptTokens, Cached: cached, Output: reported.CompletionTokens}
}

// newJob is the job of the turn whose reply fin stores, held by the
// turn itself (its claim's token) for JobLease; nil without a JobStore,
// and when there is nothing to do after the reply: no title, no batch to
// learn, no exchange to index (search off), no summary due (or the app
// makes its own). A turn with nothing to do after it records no job (and
// costs no write for it).
func (svc *Service) newJob(plan *turnPlan, fin finished, memoryTokens int) *Job {
	if svc.Jobs == nil || fin.write == nil {
		return nil
	}
	s := fin.write.Session
	due := (s.TitleSource == sessions.TitleDefault && svc.Titler != nil) || fin.learn != nil || svc.Indexer != nil ||
		(fin.summarize && s.Context.Summaries != sessions.SummariesApp)
	if !due {
		return nil
	}
	now := svc.now()
	j := &Job{SessionID: plan.query.SessionID, ID: fin.reply.ID, UserID: plan.query.UserID, UserMessageID: plan.claim.user.ID,
		MemoryTokens: memoryTokens, CreatedAt: now, Runner: plan.claim.token, Lease: now.Add(JobLease)}
	if b := fin.learn; b != nil {
		j.Learn = &LearnBatch{From: b.From, To: b.To}
	}
	return j
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
	return s != nil && s.Bookkeeping.Answering != nil && s.Bookkeeping.Answering.Token == c.token
}
