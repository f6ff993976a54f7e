package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// Append stores messages the client composed itself (its own tool loop,
// or an imported conversation) as the next messages of the caller's
// session, under the same per-user limits as turns: the batch counts
// against the messages a minute, is refused once the day's tokens are
// spent, and its tokens count against the day (later turns send them to
// the model). A retry under the same key returns the stored batch and
// is not counted or charged again. It is one batched read and one commit,
// the limits included.
//
// The result says whether the session's summary is due (see AfterAppend),
// as planned from what the commit wrote: no read of its own.
func (svc *Service) Append(ctx context.Context, userID, sessionID, key, ifMatch string, drafts []history.Draft) (*Appended, error) {
	if err := svc.checkAppend(sessionID, key, drafts); err != nil {
		return nil, err
	}
	for i := range drafts {
		if err := svc.attach(ctx, userID, sessionID, &drafts[i], fmt.Sprintf("messages[%d].attachments", i)); err != nil {
			return nil, err
		}
	}
	q := AppendQuery{UserID: userID, SessionID: sessionID, Key: key, IfMatch: ifMatch}
	var out *Appended
	err := svc.waitTurn(true, func() (err error) {
		out, err = svc.tryAppend(ctx, q, drafts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkAppend checks a batch before anything is read: its messages and
// key, that the client sends no system message unless the operator allows
// it, and the session's id.
func (svc *Service) checkAppend(sessionID, key string, drafts []history.Draft) error {
	if err := history.Validate(key, drafts...); err != nil {
		return err
	}
	if !svc.AllowSystemMessages {
		for i, d := range drafts {
			if d.Role == history.RoleSystem {
				return errs.Errorf(errs.EINVALID, "messages[%d].role: system messages come from the server only (the operator can allow them with CLIENT_SYSTEM_MESSAGES=on)", i)
			}
		}
	}
	return sessions.CheckID(sessionID)
}

// tryAppend appends the batch as of now, in one read and one commit.
func (svc *Service) tryAppend(ctx context.Context, q AppendQuery, drafts []history.Draft) (*Appended, error) {
	now := svc.now()
	plan, err := svc.History.PlanFor(q.UserID, q.SessionID, q.Key, drafts...)
	if err != nil {
		return nil, err
	}
	q.Day = Day(now)
	var out *Appended
	version, err := svc.Turns.RunAppend(ctx, q, func(st *AppendState) (w *AppendWrite, err error) {
		out, w, err = svc.planAppend(st, q, plan, now)
		return w, err
	})
	if err != nil {
		return nil, err
	}
	out.Version = version
	return out, nil
}

// planAppend decides an append on the state read: the batch's commit (the
// messages, the session and its context, the per-minute quota and the tokens),
// or nothing when the batch is stored already, and what the caller gets.
func (svc *Service) planAppend(st *AppendState, q AppendQuery, plan history.Plan, now time.Time) (*Appended, *AppendWrite, error) {
	out := &Appended{UserID: q.UserID, SessionID: q.SessionID}
	s, t := st.Session.Clone(), st.Tail.Clone()
	msgs, err := plan(s, t, st.Stored)
	if err != nil {
		return nil, nil, err
	}
	if len(msgs) == 0 { // stored before: not counted or charged again
		// By another request, unless a commit of this one stored it (and
		// lost its answer).
		out.Messages, out.replayed = st.Stored, !st.MayHaveLanded
		return out, nil, nil
	}
	if q.IfMatch != "" && st.Version != q.IfMatch {
		return nil, nil, errs.Errorf(errs.ECHANGED, "the session changed since its context was read (ifMatch %q); read the context again and resend", q.IfMatch)
	}
	u := st.Usage
	if err := u.AdmitMessages(now, svc.Limits, len(msgs)); err != nil {
		return nil, nil, err
	}
	n := 0
	for _, m := range msgs {
		n += m.Tokens
	}
	out.Messages = msgs // the store names them in place
	_, due := history.PlanCompaction(s, t, svc.History.BudgetFor(s), svc.mayBeDue(s))
	out.compactionDue = due && s.Context.Summaries != sessions.SummariesApp // the app makes its own
	out.fixed = svc.fixed(s)
	return out, &AppendWrite{Session: s, Tail: t, Messages: msgs, Quota: u, Tokens: n}, nil
}

// mayBeDue is what an append, which reads no memory, reserves besides the
// history to tell whether a summary may be due: the system prompt and the
// memory block's cap. It only decides whether AfterAppend looks closer
// (summaryFixed); no summary is made on its word.
func (svc *Service) mayBeDue(s *sessions.Session) int {
	n := svc.fixed(s)
	if svc.Memory != nil {
		n += longterm.DefaultSettings().BlockTokens + systemMessageTokens
	}
	return n
}

// AfterAppend does what follows an append once its caller has the answer:
// it embeds the units of search stored (see IndexUnits) and, when the
// session's summary is due, folds its oldest messages into it with the
// server's model, under the same lease and checks as a turn's summary, so
// summary_buffer means the same for an app that runs its own model. Their
// tokens are charged to the user's day; failures are logged.
func (svc *Service) AfterAppend(ctx context.Context, a *Appended) {
	if a == nil || a.replayed {
		return
	}
	svc.IndexUnits(ctx, a.UserID, a.SessionID, a.Messages)
	if !a.compactionDue || len(a.Messages) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	ctx, meter := WithMeter(ctx)
	defer func() { svc.chargeAfter(ctx, a.UserID, a.SessionID, a.day(), meter.Tokens()) }()
	fixed, err := svc.summaryFixed(ctx, a.UserID, a.fixed)
	if err != nil {
		svc.logError(ctx, "reading the memory block for a summary after an append failed", a.SessionID, err)
		return
	}
	_, err = svc.History.Compact(ctx, a.SessionID, fixed)
	if err != nil && !errors.Is(err, history.ErrNothingToCompact) && !errors.Is(err, history.ErrCompactionBusy) {
		svc.logError(ctx, "compaction after an append failed", a.SessionID, err)
	}
}

// Appended is what an append stored.
type Appended struct {
	UserID, SessionID string
	Messages          []history.Message
	Version           string
	compactionDue     bool
	fixed             int // the session's system prompt and instructions, in tokens
	// replayed: another request stored the batch (a retry under its key),
	// and did what follows it.
	replayed bool
}

// day is the day whose spend the append charged.
func (a *Appended) day() string { return dayOf(a.Messages) }

// summaryFixed is what a request of userID's holds besides the history,
// as a summary is planned against: the system prompt and the memory block
// as it stands (one read; nothing when memory is off or empty), as GET
// …/context counts it.
func (svc *Service) summaryFixed(ctx context.Context, userID string, fixed int) (int, error) {
	n := fixed
	if svc.Memory == nil {
		return n, nil
	}
	text, tokens, err := svc.Memory.Block(ctx, userID)
	return n + blockOf(MemoryBlock{Text: text, Tokens: tokens}).tokens, err
}

// IndexUnits embeds, for search and recall, what an append stored,
// as units (see Indexer): each question with its reply, each tool round's
// results with the answer after them, and each other message search finds
// on its own (a session's opening reply, a question left unanswered, a
// reply appended apart from its question). Its tokens are charged to the
// user's day; failures are logged (the messages are stored either way).
// It returns how many units it stored.
func (svc *Service) IndexUnits(ctx context.Context, userID, sessionID string, msgs []history.Message) int {
	if svc.Indexer == nil {
		return 0
	}
	ctx, meter := WithMeter(ctx)
	defer func() { svc.chargeAfter(ctx, userID, sessionID, dayOf(msgs), meter.Tokens()) }()
	stored, err := svc.Indexer.Index(ctx, &sessions.Session{ID: sessionID, UserID: userID}, msgs)
	if err != nil {
		svc.logError(ctx, "embedding appended messages failed", sessionID, err)
	}
	return stored
}

// dayOf is the day whose spend the append that stored msgs charged.
func dayOf(msgs []history.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return Day(msgs[0].CreatedAt)
}

// Searchable is how many of msgs search finds once they are indexed.
func Searchable(msgs []history.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Searchable() {
			n++
		}
	}
	return n
}
