package chat

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// MaxTitleChars is the longest generated title kept.
const MaxTitleChars = 60

// afterTurnTimeout bounds the work that follows a reply.
const afterTurnTimeout = 2 * time.Minute

// afterReply is a turn's job as the turn that wrote it runs it: from what
// the turn has in hand, under the lease its reply's commit took. It does
// the work, then deletes the job. Without a job recorded (no JobStore)
// the work is done all the same, only not durably.
type afterReply struct {
	svc *Service
	res *TurnResult
}

// Do does the work that follows the reply.
func (a afterReply) Do(ctx context.Context) {
	a.svc.afterTurn(ctx, a.res)
	if j := a.res.job; j != nil {
		if err := a.svc.Jobs.FinishJob(context.WithoutCancel(ctx), j.SessionID, j.ID); err != nil {
			a.svc.logError(ctx, "finishing the job after a reply failed; the sweep runs it again", j.SessionID, err)
		}
	}
}

// afterTurn does what must not delay the reply: it indexes the exchange
// for search, names the session after its first exchange (unless its user
// named it), learns long-term memory
// and folds old messages into the summary when the session needs it, and
// charges the model tokens of all that to the user (through a Metered
// model). Failures are logged; the next turn tries again.
func (svc *Service) afterTurn(ctx context.Context, res *TurnResult) {
	if res == nil || res.Replayed {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterTurnTimeout)
	defer cancel()
	ctx, meter := WithMeter(ctx)
	// This work's model tokens count against the user's day like the
	// turn's, unless the session was erased meanwhile.
	defer func() {
		svc.chargeAfter(ctx, res.Session.UserID, res.Session.ID, Day(res.Reply.CreatedAt), meter.Tokens())
	}()
	s := res.Session
	// The exchange is searchable first: a user may search for it at once.
	if svc.Indexer != nil {
		charged, _ := WithMeter(ctx) // charged with the reply (see finish)
		if err := svc.index(charged, s, res); err != nil {
			svc.logError(ctx, "embedding the exchange for search failed", s.ID, err)
		}
	}
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
	fixed := svc.fixed(s) + res.memoryTokens // as the turn counted it
	if _, ok := history.PlanCompaction(s, res.Tail, svc.History.BudgetFor(s), fixed); ok && s.Context.Summaries != sessions.SummariesApp {
		_, err := svc.History.Compact(ctx, s.ID, fixed)
		if err != nil && !errors.Is(err, history.ErrNothingToCompact) && !errors.Is(err, history.ErrCompactionBusy) {
			svc.logError(ctx, "compaction failed", s.ID, err)
		}
	}
}

// index makes a turn's messages searchable: its question and reply
// together (a question whose reply only calls tools on its own); after
// tool results, those results with the answer (or alone, when the model
// called tools again).
func (svc *Service) index(ctx context.Context, s *sessions.Session, res *TurnResult) error {
	msgs := []history.Message{res.User, res.Reply}
	if res.User.Role == history.RoleTool {
		msgs = append(toolResultsUpTo(res.Tail, res.User), res.Reply)
	}
	_, err := svc.Indexer.Index(ctx, s, msgs)
	return err
}

// toolResultsUpTo is the tool results a turn stored, oldest first, ending
// with last: last and the tool results before it in t.
func toolResultsUpTo(t *history.Tail, last history.Message) []history.Message {
	out := []history.Message{last}
	if t == nil {
		return out
	}
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if m := t.Messages[i]; m.Role == history.RoleTool && m.Seq == out[0].ParentSeq {
			out = append([]history.Message{m}, out...)
		}
	}
	return out
}

// Indexer makes stored messages searchable: it embeds and stores their
// units (a question and its reply, a tool round's results with the answer
// after them, a message with no partner), each once, and says how many.
type Indexer interface {
	Index(ctx context.Context, s *sessions.Session, msgs []history.Message) (int, error)
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
