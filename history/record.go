package history

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// RecordedModel is the model stored on summaries an app made itself.
const RecordedModel = "client"

// RecordSummary stores a summary that an app made with its own model, of
// messages from..to of the active branch of userID's session (which
// continues its current summary, if any), as a compaction record that the
// next context uses exactly as the server's own. It is refused (EINVALID)
// unless the session uses summary_buffer; from is at most one past the
// current summary's end (no message is skipped) and to beyond it; to is
// in the stored window, on the active branch, not its newest message, and
// ends a tool exchange; the summary is 1 to MaxSummaryChars characters
// and at most half the session's budget. Recording the same summary up to
// the same message again returns the stored record (replayed); another
// summary up to it is ECONFLICT.
func (svc *Service) RecordSummary(ctx context.Context, userID, sessionID string, from, to int, summary string) (c *Compaction, replayed bool, err error) {
	if err := sessions.CheckID(sessionID); err != nil {
		return nil, false, err
	}
	summary = strings.TrimSpace(summary)
	switch n := utf8.RuneCountInString(summary); {
	case n == 0:
		return nil, false, errs.Errorf(errs.EINVALID, "summary: empty")
	case n > MaxSummaryChars:
		return nil, false, errs.Errorf(errs.EINVALID, "summary: at most %d characters", MaxSummaryChars)
	case from < 0 || to < from:
		return nil, false, errs.Errorf(errs.EINVALID, "fromSeq and toSeq: 0 <= fromSeq <= toSeq")
	}
	c = &Compaction{ID: CompactionID(to), StartSeq: from, EndSeq: to, Summary: summary, Model: RecordedModel, CreatedAt: clock.Stored(svc.Now)}
	err = svc.Store.SaveCompaction(ctx, sessionID, c, func(s *sessions.Session, t *Tail) error {
		if err := s.CheckOwner(userID); err != nil {
			return err
		}
		if err := checkRecorded(s, t, c, svc.BudgetFor(s)); err != nil {
			return err
		}
		sm := SummaryMessage(c)
		if c.Tokens = svc.Tokens.Count(s.Model, &sm); c.Tokens > svc.BudgetFor(s)/2 {
			return errs.Errorf(errs.EINVALID, "summary: %d tokens, more than half the session's budget of %d", c.Tokens, svc.BudgetFor(s))
		}
		t.Compaction = c
		t.Messages = after(t.Messages, c.EndSeq)
		s.Bookkeeping.Summary, s.Bookkeeping.SummaryUpdatedAt = c.Summary, &c.CreatedAt
		return nil
	})
	if errs.CodeOf(err) == errs.ECONFLICT { // a record up to to exists: the same one is a replay
		all, lerr := svc.Store.ListCompactions(ctx, sessionID)
		if lerr != nil {
			return nil, false, lerr
		}
		for i := range all {
			if all[i].ID == c.ID && all[i].Summary == summary && all[i].StartSeq == from {
				return &all[i], true, nil
			}
		}
		return nil, false, errs.Errorf(errs.ECONFLICT, "another summary up to message %d is stored", to)
	}
	if err != nil {
		return nil, false, err
	}
	return c, false, nil
}

// checkRecorded checks an app's summary c against the session as stored.
func checkRecorded(s *sessions.Session, t *Tail, c *Compaction, budget int) error {
	if s.Context.Strategy != sessions.StrategySummaryBuffer {
		return errs.Errorf(errs.EINVALID, "the session's strategy is %s: summaries are used only under summary_buffer", s.Context.Strategy)
	}
	prev := prevEnd(t.Compaction)
	first := max(prev+1, s.Bookkeeping.HistoryFrom) // the first message no summary covers that is still stored
	switch {
	case c.StartSeq > first:
		return errs.Errorf(errs.EINVALID, "fromSeq: the current summary ends at message %d, so fromSeq must be at most %d (no message may be skipped)", prev, first)
	case c.EndSeq <= prev:
		return errs.Errorf(errs.EINVALID, "toSeq: the current summary already covers message %d", c.EndSeq)
	case !s.Path().Contains(c.EndSeq):
		return errs.Errorf(errs.EINVALID, "toSeq: message %d is not on the active branch", c.EndSeq)
	}
	verbatim := after(t.Messages, prev)
	if len(verbatim) == 0 || verbatim[len(verbatim)-1].Seq == c.EndSeq {
		return errs.Errorf(errs.EINVALID, "toSeq: a summary leaves at least the newest message verbatim")
	}
	for _, u := range bundles(verbatim) {
		if u.msgs[len(u.msgs)-1].Seq == c.EndSeq {
			return nil
		}
	}
	return errs.Errorf(errs.EINVALID, "toSeq: message %d is not in the stored window, or ends inside a tool exchange (a call and all of its results go together)", c.EndSeq)
}
