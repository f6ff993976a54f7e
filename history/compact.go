package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Summarizer writes a new summary from the previous one and the messages
// that follow it. It returns the summary and the model that wrote it.
type Summarizer interface {
	Summarize(ctx context.Context, model, previous string, msgs []Message) (summary, usedModel string, err error)
}

// CompactionLease is how long one instance may hold a session's compaction.
const CompactionLease = 2 * time.Minute

// Outcomes of Compact that are not failures. They are *errs.Error
// values, so storage passes them through unchanged.
var (
	ErrNothingToCompact = &errs.Error{Code: errs.EPRECONDITION, Message: "nothing to compact"}
	ErrCompactionBusy   = &errs.Error{Code: errs.EPRECONDITION, Message: "another compaction holds the lease"}
)

// MaxSummaryChars bounds a stored summary (about 2,000 tokens).
const MaxSummaryChars = 8000

// Compact folds the oldest verbatim messages of a summary_buffer session
// into its summary, if the session needs it, and returns the new record.
// It never changes or deletes messages. Two instances compacting at once
// store one record: a lease keeps the second from calling the model, and
// the record's id and a check of the previous summary in the saving
// transaction make a second record impossible. A failure leaves history as
// it was; the next turn tries again.
func (svc *Service) Compact(ctx context.Context, sessionID string, fixed int) (*Compaction, error) {
	var plan CompactionPlan
	var model string
	var path sessions.Path
	var have []Message // the tail read: usually every message to fold
	now := clock.Stored(svc.Now)
	err := svc.Store.UpdateTail(ctx, sessionID, func(s *sessions.Session, t *Tail) error {
		var ok bool
		if plan, ok = PlanCompaction(s, t, svc.BudgetFor(s), fixed); !ok {
			return ErrNothingToCompact
		}
		if t.CompactingUntil.After(now) {
			return ErrCompactionBusy
		}
		t.CompactingUntil = now.Add(CompactionLease)
		model, path, have = s.Model, s.PathTo(plan.EndSeq), t.Messages
		return nil
	})
	if err != nil {
		return nil, err
	}
	c, err := svc.summarize(ctx, sessionID, model, path, plan, have)
	if err != nil {
		svc.releaseLease(ctx, sessionID)
		return nil, err
	}
	err = svc.Store.SaveCompaction(ctx, sessionID, c, func(s *sessions.Session, t *Tail) error {
		if prevEnd(t.Compaction) != prevEnd(plan.Previous) {
			return errs.Errorf(errs.ECONFLICT, "the summary moved on meanwhile")
		}
		if !s.Path().Contains(c.EndSeq) {
			// The record stays: it is the summary of its own branch, which
			// a switch back to that branch uses. SummaryUpdatedAt says a
			// record was saved (BranchTail and purges look for records
			// only then); the summary in use stays as it is.
			t.CompactingUntil = time.Time{}
			s.Bookkeeping.SummaryUpdatedAt = &c.CreatedAt
			return nil
		}
		t.Compaction = c
		t.CompactingUntil = time.Time{}
		// What the summary covers need not stay verbatim (the raw messages
		// stay where they are): the tail, rewritten on every append, shrinks.
		t.Messages = after(t.Messages, c.EndSeq)
		s.Bookkeeping.Summary, s.Bookkeeping.SummaryUpdatedAt = c.Summary, &c.CreatedAt
		return nil
	})
	if err != nil {
		// A conflict means another compaction saved, and cleared the lease.
		// Any other failure would leave the lease held until it expires.
		if errs.CodeOf(err) != errs.ECONFLICT {
			svc.releaseLease(ctx, sessionID)
		}
		return nil, err
	}
	return c, nil
}

func prevEnd(c *Compaction) int {
	if c == nil {
		return -1
	}
	return c.EndSeq
}

func (svc *Service) summarize(ctx context.Context, sessionID, model string, path sessions.Path, plan CompactionPlan, have []Message) (*Compaction, error) {
	if svc.Summarizer == nil {
		return nil, errors.New("history: no summarizer configured")
	}
	msgs, ok := onPath(have, path, plan.StartSeq, plan.EndSeq)
	if !ok { // a gap behind the tail: read the range
		all, err := svc.Store.MessageRange(ctx, sessionID, plan.StartSeq, plan.EndSeq)
		if err != nil {
			return nil, err
		}
		// Only the branch's messages: others of the range belong to
		// branches that forked from it.
		msgs, _ = onPath(all, path, plan.StartSeq, plan.EndSeq)
	}
	previous := ""
	if plan.Previous != nil {
		previous = plan.Previous.Summary
	}
	text, used, err := svc.Summarizer.Summarize(ctx, model, previous, msgs)
	if err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, errors.New("history: the summarizer returned nothing")
	}
	if r := []rune(text); len(r) > MaxSummaryChars {
		text = string(r[:MaxSummaryChars])
	}
	c := &Compaction{
		ID: CompactionID(plan.EndSeq), StartSeq: plan.StartSeq, EndSeq: plan.EndSeq,
		Summary: text, Model: used, CreatedAt: clock.Stored(svc.Now),
	}
	sm := SummaryMessage(c)
	c.Tokens = svc.Tokens.Count(model, &sm)
	return c, nil
}

// releaseLease gives the lease back after a failed summarization, so the
// next turn can try at once; if this fails too, the lease simply expires.
func (svc *Service) releaseLease(ctx context.Context, sessionID string) {
	svc.Store.UpdateTail(context.WithoutCancel(ctx), sessionID, func(_ *sessions.Session, t *Tail) error {
		t.CompactingUntil = time.Time{}
		return nil
	})
}

// ReadTail returns the caller's session and its tail, read in one round
// trip whatever the length of the session.
func (svc *Service) ReadTail(ctx context.Context, userID, sessionID string) (*sessions.Session, *Tail, error) {
	if err := sessions.CheckID(sessionID); err != nil {
		return nil, nil, err
	}
	s, t, err := svc.Store.ReadTail(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.CheckOwner(userID); err != nil {
		return nil, nil, err
	}
	return s, t, nil
}

// Compactions returns the compaction records of s, oldest first.
func (svc *Service) Compactions(ctx context.Context, s *sessions.Session) ([]Compaction, error) {
	return svc.Store.ListCompactions(ctx, s.ID)
}

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

// Compaction thresholds, as shares of the budget left for history: once the
// verbatim part passes compactAbove, the oldest of it is summarized until
// what stays verbatim is at most keepBelow. A summary changes the start of
// every request after it (the provider's cache then serves only the
// prompts before it), so by default (trim "steps") a session compacts
// later (past 80%) and far below that (to 20%, see compactBounds), so
// half as often; with trim "each" it compacts at 60% down to 30%, more often,
// and sends fewer tokens. Each summarization handles at most
// MaxCompactMessages messages, so it costs a bounded amount however long
// the session is.
const (
	compactAbovePct      = 60
	keepBelowPct         = 30
	compactAboveStepsPct = 80
	keepBelowStepsPct    = 20
	MaxCompactMessages   = 200
)

// A provider's prompt cache serves nothing of a prompt shorter than
// MinCachedPrefix tokens, and then the longest prefix shared with a
// recent prompt in steps of CachedPrefixStep (OpenAI's rule, from its
// prompt caching guide, read on 2026-11-28; Anthropic's minimum is the
// same 1,024 on its larger models).
const (
	MinCachedPrefix  = 1024
	CachedPrefixStep = 128
)

// CompactionPlan is a range of messages to fold into the summary.
type CompactionPlan struct {
	Previous *Compaction // the summary to extend; nil for the first
	StartSeq int
	EndSeq   int
}

// PlanCompaction says whether a summary_buffer session should compact now,
// and which messages. The range starts right after the previous summary and
// ends on a bundle boundary inside the tail, leaving the latest exchange
// verbatim.
func PlanCompaction(s *sessions.Session, t *Tail, budget, fixed int) (CompactionPlan, bool) {
	if s.Context.Strategy != sessions.StrategySummaryBuffer || len(t.Messages) == 0 {
		return CompactionPlan{}, false
	}
	avail := budget - fixed - ReplyPriming
	// Messages before HistoryFrom were deleted by message retention: a
	// summary starts at the first still stored, never summarizing nothing.
	p := CompactionPlan{Previous: t.Compaction, StartSeq: s.Bookkeeping.HistoryFrom}
	verbatim, _ := pruneToolOutputs(t.Messages, s.Context.ToolLimits()) // what Build sends: pruned first
	if p.Previous != nil {
		p.StartSeq = max(p.Previous.EndSeq+1, s.Bookkeeping.HistoryFrom)
		verbatim = after(verbatim, p.Previous.EndSeq)
		avail -= p.Previous.Tokens
	}
	// Due by tokens (the budget), or by bytes: a tail holds at most
	// MaxTailBytes, and messages that left it unsummarized would leave
	// the context silently (many short messages fill it long before they
	// fill a large budget).
	total, bytes := tokensOf(verbatim), bytesOf(verbatim)
	above, keep := compactBounds(s, avail, budget-avail)
	if total <= above && bytes <= MaxTailBytes*compactAbovePct/100 {
		return CompactionPlan{}, false
	}
	us := bundles(verbatim)
	keepBytes := MaxTailBytes * keepBelowPct / 100
	end := -1
	for i := 0; i < len(us)-1 && (total > keep || bytes > keepBytes); i++ { // never the last bundle
		total -= us[i].tokens
		for j := range us[i].msgs {
			bytes -= StoredBytes(&us[i].msgs[j])
		}
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

// compactBounds are the verbatim tokens past which session s compacts
// and down to which, with avail tokens left for its history and before
// tokens ahead of it in the request (the system prompt, the memory
// block, the summary). With trim "each": 60% and 30% of avail. In steps:
// past 80%, down to 20%, but never below what keeps the request
// after the compaction as long as a cacheable prefix (MinCachedPrefix:
// under it the provider caches nothing, and each turn until the history
// grows back past it would be sent whole), nor above 30%.
func compactBounds(s *sessions.Session, avail, before int) (above, keep int) {
	if s.Context.Trim == sessions.TrimEach {
		return avail * compactAbovePct / 100, avail * keepBelowPct / 100
	}
	keep = max(avail*keepBelowStepsPct/100, MinCachedPrefix+CachedPrefixStep-before)
	return avail * compactAboveStepsPct / 100, min(keep, avail*keepBelowPct/100)
}

// bytesOf is what msgs take in a tail (see StoredBytes).
func bytesOf(msgs []Message) int {
	n := 0
	for i := range msgs {
		n += StoredBytes(&msgs[i])
	}
	return n
}

// onPath returns the messages of msgs that are on path with from <= seq
// <= to, and whether msgs held every message of path in that range.
func onPath(msgs []Message, path sessions.Path, from, to int) ([]Message, bool) {
	var out []Message
	for _, m := range msgs {
		if m.Seq >= from && m.Seq <= to && path.Contains(m.Seq) {
			out = append(out, m)
		}
	}
	want := 0
	for _, sp := range path {
		if lo, hi := max(sp.From, from), min(sp.To, to); hi >= lo {
			want += hi - lo + 1
		}
	}
	return out, len(out) == want
}
