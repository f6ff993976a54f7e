package history

import (
	"context"
	"errors"
	"slices"
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

// SummaryInstructions is what a summarizer asks the model to do.
const SummaryInstructions = "You maintain the running summary of a conversation between a user and an assistant. " +
	"Rewrite the summary so that it also covers the new messages. Keep key entities (names, numbers, dates, places, " +
	"identifiers), the user's intent and stated preferences, decisions made, and open questions or tasks. " +
	"Write plain prose, as short as completeness allows, at most 300 words. Answer with the summary only."

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
	now := clock.Stored(svc.Now)
	err := svc.Repo.UpdateTail(ctx, sessionID, func(s *sessions.Session, t *Tail) error {
		var ok bool
		if plan, ok = PlanCompaction(s, t, svc.BudgetFor(s), fixed); !ok {
			return ErrNothingToCompact
		}
		if t.CompactingUntil.After(now) {
			return ErrCompactionBusy
		}
		t.CompactingUntil = now.Add(CompactionLease)
		model, path = s.Model, s.PathTo(plan.EndSeq)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c, err := svc.summarize(ctx, sessionID, model, path, plan)
	if err != nil {
		svc.releaseLease(ctx, sessionID)
		return nil, err
	}
	err = svc.Repo.SaveCompaction(ctx, sessionID, c, func(s *sessions.Session, t *Tail) error {
		if prevEnd(t.Compaction) != prevEnd(plan.Previous) {
			return errs.Errorf(errs.ECONFLICT, "the summary moved on meanwhile")
		}
		if !s.Path().Contains(c.EndSeq) {
			// The record stays: it is the summary of its own branch, which
			// a switch back to that branch uses. SummaryUpdatedAt says a
			// record was saved (BranchTail and purges look for records
			// only then); the summary in use stays as it is.
			t.CompactingUntil = time.Time{}
			s.SummaryUpdatedAt = &c.CreatedAt
			return nil
		}
		t.Compaction = c
		t.CompactingUntil = time.Time{}
		// What the summary covers need not stay verbatim (the raw messages
		// stay where they are): the tail, rewritten on every append, shrinks.
		t.Messages = after(t.Messages, c.EndSeq)
		s.Summary, s.SummaryUpdatedAt = c.Summary, &c.CreatedAt
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

func (svc *Service) summarize(ctx context.Context, sessionID, model string, path sessions.Path, plan CompactionPlan) (*Compaction, error) {
	if svc.Summarizer == nil {
		return nil, errors.New("history: no summarizer configured")
	}
	all, err := svc.Repo.MessageRange(ctx, sessionID, plan.StartSeq, plan.EndSeq)
	if err != nil {
		return nil, err
	}
	// Only the branch's messages: others of the range belong to branches
	// that forked from it.
	msgs := slices.DeleteFunc(all, func(m Message) bool { return !path.Contains(m.Seq) })
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
	svc.Repo.UpdateTail(context.WithoutCancel(ctx), sessionID, func(_ *sessions.Session, t *Tail) error {
		t.CompactingUntil = time.Time{}
		return nil
	})
}

// ReadContext returns the caller's session and its tail, read in one round
// trip whatever the length of the session.
func (svc *Service) ReadContext(ctx context.Context, userID, sessionID string) (*sessions.Session, *Tail, error) {
	if err := sessions.CheckID(sessionID); err != nil {
		return nil, nil, err
	}
	s, t, err := svc.Repo.ReadContext(ctx, sessionID)
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
	return svc.Repo.ListCompactions(ctx, s.ID)
}
