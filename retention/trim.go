package retention

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/sessions"
)

// Message retention: the sweep deletes the messages of every session
// (whatever its status) once they are older than its period
// (sessions.Session.MessageRetention), a page at a time. A trim is
// resumable and idempotent: each page's write deletes its messages and
// records them gone in the session and its tail at once, and a session
// stays due (its HistoryStartAt unchanged) until its last page is done.

// TrimStore is the storage message retention needs.
type TrimStore interface {
	// HistoriesDue returns up to limit sessions whose oldest stored
	// message may be due under q, ordered by the time q filters on, then
	// by ID, after cursor.
	HistoriesDue(ctx context.Context, q TrimQuery, after *Cursor, limit int) ([]*sessions.Session, error)
	// CountHistoriesDue counts them (an aggregation, not a scan).
	CountHistoriesDue(ctx context.Context, q TrimQuery) (int, error)
	// FirstMessageAfter returns the seq of a message of the session
	// written after t, the earliest by time (of messages written at the
	// same moment, any); ok is false if there is none.
	FirstMessageAfter(ctx context.Context, sessionID string, t time.Time) (seq int, ok bool, err error)
	// MessageRange returns the session's messages with from <= seq <= to.
	MessageRange(ctx context.Context, sessionID string, from, to int) ([]history.Message, error)
	// TrimMessages deletes up to limit of the session's messages with seq
	// below before, lowest first, with what is derived from them alone
	// (their exchanges in the recall index), after fn recorded them gone
	// in the session and its tail, which are written in the same commit.
	// done reports that none below before is left. It returns how many it
	// deleted; a session that is gone is errs.ENOTFOUND.
	TrimMessages(ctx context.Context, sessionID string, before, limit int, fn TrimFunc) (deleted int, done bool, err error)
}

// TrimFunc records a page of a trim in the session and its tail.
type TrimFunc func(s *sessions.Session, t *history.Tail, gone []history.Message, done bool) error

// TrimQuery selects sessions whose history may be due.
type TrimQuery struct {
	// OwnPeriod selects by the session's own period: its oldest message
	// falls due at or before At (Session.HistoryExpiresAt). Otherwise it
	// selects sessions whose oldest message was written at or before At.
	OwnPeriod bool
	At        time.Time
}

// TrimAction is a trim a dry run would make.
type TrimAction struct {
	SessionID string `json:"sessionId"`
	// Before is the moment messages older than it go; HistoryFrom the seq
	// the session's history would start from; Messages how many go.
	Before      time.Time `json:"before"`
	HistoryFrom int       `json:"historyFrom"`
	Messages    int       `json:"messages"`
}

// trimWorkers is how many sessions are trimmed at once.
const trimWorkers = 8

// trimScan is how many messages a look for the next question reads at once.
const trimScan = 16

// trimWork is one query for due histories, and where it stands.
type trimWork struct {
	q      TrimQuery
	cursor *Cursor
	done   bool
	seen   map[string]bool // the sessions this run's queries found, shared: one may find what another did
}

// trimKinds are the queries that find every history due at now: by the
// policy's period (if set) and by sessions' own.
func (sw *Sweeper) trimKinds(now time.Time) []*trimWork {
	seen := map[string]bool{}
	kinds := []*trimWork{{q: TrimQuery{OwnPeriod: true, At: now}, seen: seen}}
	if p := sw.Policy.Messages; p > 0 {
		kinds = append(kinds, &trimWork{q: TrimQuery{At: now.Add(-p)}, seen: seen})
	}
	return kinds
}

// trimPage trims one page of k's sessions.
func (sw *Sweeper) trimPage(ctx context.Context, r *Report, now time.Time, k *trimWork, dryRun bool, out func() bool) error {
	if out() {
		return errOutOfTime
	}
	page, err := sw.Store.HistoriesDue(ctx, k.q, k.cursor, sw.pageSize())
	if err != nil {
		return err
	}
	if len(page) < sw.pageSize() {
		k.done = true
	} else {
		last := page[len(page)-1]
		at := last.Bookkeeping.HistoryStartAt
		if k.q.OwnPeriod {
			at = last.HistoryExpiresAt()
		}
		k.cursor = &Cursor{ExpiresAt: at, ID: last.ID}
	}
	page = slices.DeleteFunc(page, func(s *sessions.Session) bool {
		seen := k.seen[s.ID]
		k.seen[s.ID] = true
		return seen
	})
	type outcome struct {
		plan    *TrimAction
		deleted int
		err     error
	}
	results := make([]outcome, len(page))
	parallel.Each(len(page), trimWorkers, func(i int) {
		results[i].plan, results[i].deleted, results[i].err = sw.trim(ctx, page[i], now, dryRun, out)
	})
	var fatal error
	for i, s := range page {
		o := results[i]
		r.MessagesDeleted += o.deleted
		switch {
		case errors.Is(o.err, errOutOfTime):
			k.done, fatal = false, errOutOfTime // the session stays due: the next run goes on
		case dryRun && o.err == nil:
			r.PlannedTrims = append(r.PlannedTrims, *o.plan)
		case o.err == nil && o.deleted == 0: // its history was only dated
		default:
			if err := sw.tally(ctx, r, s.ID, o.err, &r.SessionsTrimmed); err != nil && fatal == nil {
				fatal = err
			}
		}
	}
	return fatal
}

// trim deletes s's messages older than its period at now, page by page
// (or, dry, says what it would delete).
func (sw *Sweeper) trim(ctx context.Context, s *sessions.Session, now time.Time, dryRun bool, out func() bool) (*TrimAction, int, error) {
	period := s.MessageRetention(sw.Policy)
	if period <= 0 {
		return nil, 0, errSkip
	}
	cutoff := now.Add(-period)
	before, keptFrom, err := sw.trimPoint(ctx, s, cutoff)
	if err != nil {
		return nil, 0, err
	}
	if dryRun {
		if before <= s.Bookkeeping.HistoryFrom {
			return nil, 0, errSkip
		}
		return &TrimAction{SessionID: s.ID, Before: cutoff, HistoryFrom: before, Messages: before - s.Bookkeeping.HistoryFrom}, 0, nil
	}
	var files []string // the attachments of the page's messages
	record := func(cur *sessions.Session, t *history.Tail, gone []history.Message, done bool) error {
		history.Trim(cur, t, gone, before, done, keptFrom)
		files = files[:0] // a commit tried again records its page again
		for _, m := range gone {
			files = append(files, history.PartIDs(m.Attachments)...)
		}
		return nil
	}
	deleted := 0
	for done := false; !done; {
		if out() {
			return nil, deleted, errOutOfTime
		}
		var n int
		n, done, err = sw.Store.TrimMessages(ctx, s.ID, before, sw.trimPageSize(), record)
		deleted += n
		if err == nil && n > 0 && len(files) > 0 && sw.ForgetFiles != nil {
			err = sw.ForgetFiles(ctx, s.UserID, files)
		}
		if err != nil {
			return nil, deleted, err
		}
	}
	return nil, deleted, nil
}

func (sw *Sweeper) trimPageSize() int {
	if sw.TrimPageSize > 0 {
		return sw.TrimPageSize
	}
	return 200
}

// trimPoint is the seq from which s's history is kept at cutoff, and
// when that message was written (zero if none is kept): the first user
// message written after cutoff. An exchange goes as a whole once its
// question is older than the period: its reply and tool calls (written
// moments later) with it, so no reply stays without its question, no tool
// result without its call, and no recall excerpt of a question that is
// gone.
func (sw *Sweeper) trimPoint(ctx context.Context, s *sessions.Session, cutoff time.Time) (int, time.Time, error) {
	seq, ok, err := sw.Store.FirstMessageAfter(ctx, s.ID, cutoff)
	if err != nil || !ok {
		return s.NextSeq, time.Time{}, err
	}
	// One read around it serves both looks, as a rule: back, for messages
	// stored together share their time and a store may give any of them;
	// forward, for the next question.
	from := max(s.Bookkeeping.HistoryFrom, seq-trimScan)
	around, err := sw.Store.MessageRange(ctx, s.ID, from, seq+trimScan-1)
	if err != nil {
		return 0, time.Time{}, err
	}
	k := 0
	for k < len(around) && around[k].Seq < seq {
		k++
	}
	for k > 0 && around[k-1].CreatedAt.After(cutoff) {
		k--
	}
	if k < len(around) {
		seq = around[k].Seq
	}
	if k == 0 && from > s.Bookkeeping.HistoryFrom && len(around) > 0 && around[0].CreatedAt.After(cutoff) {
		// More than trimScan messages share that moment: step back further.
		if seq, err = sw.stepBack(ctx, s, seq, cutoff); err != nil {
			return 0, time.Time{}, err
		}
		around = nil
	}
	for {
		for _, m := range around {
			if m.Seq >= seq && m.Role == history.RoleUser {
				return m.Seq, m.CreatedAt, nil
			}
		}
		if len(around) > 0 {
			seq = max(seq, around[len(around)-1].Seq+1)
		}
		if around, err = sw.Store.MessageRange(ctx, s.ID, seq, seq+trimScan-1); err != nil {
			return 0, time.Time{}, err
		}
		if len(around) == 0 {
			return seq, time.Time{}, nil
		}
	}
}

// stepBack is the first of the messages before seq written after cutoff
// without one written at or before it between them.
func (sw *Sweeper) stepBack(ctx context.Context, s *sessions.Session, seq int, cutoff time.Time) (int, error) {
	for seq > s.Bookkeeping.HistoryFrom {
		msgs, err := sw.Store.MessageRange(ctx, s.ID, max(s.Bookkeeping.HistoryFrom, seq-trimScan), seq-1)
		if err != nil || len(msgs) == 0 {
			return seq, err
		}
		i := len(msgs) - 1
		for i >= 0 && msgs[i].CreatedAt.After(cutoff) {
			i--
		}
		if i >= 0 {
			return msgs[i].Seq + 1, nil
		}
		seq = msgs[0].Seq
	}
	return seq, nil
}
