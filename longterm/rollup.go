package longterm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// RollUpStore is what the history's roll-up reads besides the memory
// document.
type RollUpStore interface {
	// ListSessions lists a user's sessions of one status, most recently
	// updated first (as sessions.Store does).
	ListSessions(ctx context.Context, q sessions.ListQuery) ([]*sessions.Session, error)
	// SessionsUpdatedSince returns up to limit sessions updated after
	// since, by updatedAt then id, with the cursor of the next page (nil
	// on the last).
	SessionsUpdatedSince(ctx context.Context, since time.Time, after *sessions.Cursor, limit int) ([]*sessions.Session, *sessions.Cursor, error)
	// HistoriesToRoll returns up to limit ids of users whose history has
	// something to move at now (History.DueAt), with the cursor of the
	// next page (nil on the last).
	HistoriesToRoll(ctx context.Context, now time.Time, after *sessions.Cursor, limit int) ([]string, *sessions.Cursor, error)
	// RollUpMark is when the last complete daily roll-up started (zero if
	// none did); SetRollUpMark records it.
	RollUpMark(ctx context.Context) (time.Time, error)
	SetRollUpMark(ctx context.Context, t time.Time) error
}

// backfill is how far back a user's first roll-up looks.
const backfill = (monthsKept + 1) * 31 * 24 * time.Hour

// sessionsPage is how many sessions a roll-up lists at once: few at
// first (on most days a user has few new sessions, and every session a
// page returns is a billed read), more on each further page.
const (
	firstSessionsPage = 8
	maxSessionsPage   = 128
)

// RollUp brings userID's history up to now: the sessions active since the
// last roll-up become (or refresh) episodes, what has grown older moves
// tier, and the texts of what changed are made again (month notes and the
// background by the model, the recent tier and the month list as plain
// lines). It is idempotent: a second roll-up at the same moment finds
// nothing to do and writes nothing. It saves, like every change of
// memory, only if nothing changed meanwhile and every session it learned
// from is still there: a session purged meanwhile (or a user erased) is
// never written back; it then starts again from what is stored.
func (svc *Service) RollUp(ctx context.Context, userID string) error {
	for attempt := 0; ; attempt++ {
		err := svc.rollUp(ctx, userID, svc.Rolls)
		if (errs.CodeOf(err) != errs.ECONFLICT && !errors.Is(err, ErrSourceGone)) || attempt == 2 {
			if errors.Is(err, errUnchanged) {
				return nil
			}
			if err == nil {
				tallyOf(ctx).written.Add(1)
			}
			return err
		}
	}
}

func (svc *Service) rollUp(ctx context.Context, userID string, rolls RollUpStore) error {
	now := svc.now()
	u, err := svc.Store.GetUser(ctx, userID)
	if err != nil {
		return err
	}
	if u.Disabled {
		return errUnchanged // nothing is learned while memory is off
	}
	h := u.History.Clone()
	since := h.RolledUpAt
	if since.IsZero() {
		since = now.Add(-backfill)
	}
	var sources []string
	seen, asOf, err := svc.sessionsSince(ctx, rolls, userID, since, now)
	if err != nil {
		return err
	}
	for _, s := range seen {
		if s.NoLearning || s.MessageCount == 0 || s.LastActivityAt.Before(now.Add(-backfill)) {
			continue
		}
		h.see(Episode{SessionID: s.ID, Title: clip(s.Title, maxTitle), Summary: clip(s.Bookkeeping.Summary, maxEpisodeText), At: s.LastActivityAt})
		sources = append(sources, s.ID)
	}
	moved := h.ageOut(now)
	if len(sources) == 0 && !moved && !h.stale() {
		return errUnchanged
	}
	if err := svc.writeTiers(ctx, &h, now); err != nil {
		return err
	}
	h.RolledUpAt, h.Prompts = asOf, prompts.Version
	u.History = h
	return svc.save(ctx, u, Change{Sources: sources, KeepFacts: true})
}

// activeSince lists the user's sessions of status st updated after since.
func (svc *Service) activeSince(ctx context.Context, rolls RollUpStore, userID string, st sessions.Status, since time.Time) ([]*sessions.Session, error) {
	var out []*sessions.Session
	q := sessions.ListQuery{UserID: userID, Status: st, Limit: firstSessionsPage}
	if since.Before(svc.now().Add(-backfill + time.Hour)) {
		q.Limit = maxSessionsPage // a first roll-up, which reads every session it finds: in as few queries as it can
	}
	for {
		page, err := rolls.ListSessions(ctx, q)
		if err != nil {
			return nil, err
		}
		tallyOf(ctx).sessions.Add(int64(len(page)))
		for _, s := range page {
			if !s.UpdatedAt.After(since) {
				return out, nil
			}
			out = append(out, s)
		}
		if len(page) < q.Limit {
			return out, nil
		}
		last := page[len(page)-1]
		q.After = &sessions.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
		q.Limit = min(2*q.Limit, maxSessionsPage)
	}
}

// stale reports texts to be made again.
func (h *History) stale() bool {
	if h.EarlierStale {
		return true
	}
	for _, n := range h.Notes {
		if n.Stale {
			return true
		}
	}
	return false
}

// writeTiers makes again the texts of what changed: stale month notes and
// the background with the model, the recent tier and the month list as
// lines. A tier the user wrote stays as it is.
func (svc *Service) writeTiers(ctx context.Context, h *History, now time.Time) error {
	model := svc.HistoryModel
	for i := range h.Notes {
		n := &h.Notes[i]
		n.Sessions = episodeIDs(n.Episodes)
		if !n.Stale {
			continue
		}
		if len(n.Episodes) == 0 {
			n.Text, n.Stale = "", false
			continue
		}
		var eps []prompts.Episode
		for _, e := range n.Episodes {
			eps = append(eps, prompts.Episode{Date: e.At.Format("2006-01-02"), Title: e.Title, Summary: e.Summary})
		}
		tallyOf(ctx).model.Add(1)
		text, err := svc.Model.Complete(ctx, model, prompts.MonthNote, prompts.MonthNoteRequest(n.Month, eps))
		if err != nil {
			return err
		}
		n.Text, n.Stale = clip(oneLine(text), MaxNoteText), false
	}
	h.Notes = slices.DeleteFunc(h.Notes, func(n MonthNote) bool { return len(n.Episodes) == 0 && n.Text == "" })
	if h.EarlierStale && !h.Earlier.Edited {
		var notes [][2]string
		var ids []string
		for _, n := range h.Background {
			notes = append(notes, [2]string{n.Month, n.Text})
			ids = append(ids, n.Sessions...)
		}
		text := ""
		if len(notes) > 0 {
			tallyOf(ctx).model.Add(1)
			out, err := svc.Model.Complete(ctx, model, prompts.Background, prompts.BackgroundRequest(notes))
			if err != nil {
				return err
			}
			text = clip(out, MaxEarlierText)
		}
		h.Earlier = Tier{Text: text, UpdatedAt: &now, Sessions: uniq(ids)}
	}
	h.EarlierStale = false
	h.render(now)
	return nil
}

// render makes the recent tier and the month list from what h holds, as
// plain lines (no model): what a forgotten session leaves is shown at once.
func (h *History) render(now time.Time) {
	if !h.Recent.Edited {
		var lines []string
		for _, e := range h.Episodes {
			line := e.At.Format("Jan 2") + ": " + e.Title
			if e.Summary != "" {
				line += " (" + clip(e.Summary, 120) + ")"
			}
			lines = append(lines, line)
		}
		h.Recent = Tier{Text: joinWithin(lines, maxRecentText), UpdatedAt: &now, Sessions: episodeIDs(h.Episodes)}
	}
	if !h.Months.Edited {
		var lines, ids []string
		for _, n := range h.Notes {
			if n.Text != "" {
				month, _ := time.Parse("2006-01", n.Month)
				lines = append(lines, month.Format("Jan 2006")+": "+n.Text)
				ids = append(ids, n.Sessions...)
			}
		}
		h.Months = Tier{Text: joinWithin(lines, maxMonthsText), UpdatedAt: &now, Sessions: uniq(ids)}
	}
}

// joinWithin joins the first lines that fit within n characters with "; ".
func joinWithin(lines []string, n int) string {
	out := ""
	for _, l := range lines {
		next := l
		if out != "" {
			next = out + "; " + l
		}
		if len([]rune(next)) > n {
			break
		}
		out = next
	}
	return out
}

func episodeIDs(eps []Episode) []string {
	ids := make([]string, 0, len(eps))
	for _, e := range eps {
		ids = append(ids, e.SessionID)
	}
	return ids
}

func uniq(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// RollUpReport is what one daily roll-up of histories did, and what it
// cost.
type RollUpReport struct {
	Users    int  `json:"users"`  // users whose history was looked at
	Failed   int  `json:"failed"` // of them, those left to the next run
	Complete bool `json:"complete"`
	// Listed are the entries the listings of due users returned: one read
	// each (a session updated since the last run, or a history due).
	Listed int `json:"listed"`
	// SessionsRead are the sessions the users' roll-ups listed (a read
	// each; a save reads again those it learned from, in its transaction).
	SessionsRead int `json:"sessionsRead"`
	Written      int `json:"written"`    // histories saved (one write each)
	ModelCalls   int `json:"modelCalls"` // month notes and backgrounds made
}

// Counts are what the run did by name, as the sweep report's roll-up
// phase shows them (complete is 1 or 0).
func (r RollUpReport) Counts() map[string]int {
	complete := 0
	if r.Complete {
		complete = 1
	}
	return map[string]int{"users": r.Users, "failed": r.Failed, "complete": complete, "listed": r.Listed,
		"sessionsRead": r.SessionsRead, "written": r.Written, "modelCalls": r.ModelCalls}
}

// usersPage is how many due users one listing returns at most: each
// entry is a read wherever it is, but each call a round trip (and, on the
// emulator, a scan of every session), so few large pages beat many small
// ones; an entry is a user id and a time.
const usersPage = 5000

// rollUpWorkers is how many users' histories are rolled up at once (each
// reads and writes only its user's documents, so they do not contend).
const rollUpWorkers = 8

// RollUpDue rolls up, with run (which calls RollUp, charging the model's
// tokens as the caller does), the history of every user with session
// activity since the last complete run began, and of every user whose
// history has something to move now, rollUpWorkers at once. The sessions
// updated since are listed whole (see listActive), and each user's
// roll-up takes its own from that listing instead of querying them. A
// user whose roll-up fails is logged and left to the next run; a run that
// out cuts short is not complete, and the next looks again from the same
// moment. Roll-ups are idempotent, so a user seen twice costs a read, not
// a second note.
func (svc *Service) RollUpDue(ctx context.Context, run func(ctx context.Context, userID string) error, out func() bool) (r RollUpReport, err error) {
	tally := &rollUpTally{}
	ctx = context.WithValue(ctx, tallyKey{}, tally)
	defer tally.into(&r)
	now := svc.now()
	since, err := svc.Rolls.RollUpMark(ctx)
	if err != nil {
		return r, err
	}
	if since.IsZero() {
		since = now.Add(-backfill)
	}
	done := map[string]bool{}
	l, cut, err := svc.listActive(ctx, &r, since, now, done, run, out)
	if err != nil || cut {
		return r, err
	}
	for cursor := (*sessions.Cursor)(nil); ; {
		ids, next, err := svc.Rolls.HistoriesToRoll(ctx, now, cursor, usersPage)
		if err != nil {
			return r, err
		}
		r.Listed += len(ids)
		if !svc.rollAll(withListing(ctx, l), &r, newIDs(ids, done), run, out) {
			return r, nil
		}
		if next == nil {
			break
		}
		cursor = next
	}
	if r.Failed == 0 {
		if err := svc.Rolls.SetRollUpMark(ctx, now); err != nil {
			return r, err
		}
	}
	r.Complete = true
	return r, nil
}

// rollAll runs the roll-ups of ids, rollUpWorkers at once, and counts
// them in r; it reports false if out cut them short.
func (svc *Service) rollAll(ctx context.Context, r *RollUpReport, ids []string, run func(ctx context.Context, userID string) error, out func() bool) bool {
	var mu sync.Mutex
	cut := false
	parallel.Each(len(ids), rollUpWorkers, func(i int) {
		if out() {
			mu.Lock()
			cut = true
			mu.Unlock()
			return
		}
		err := run(ctx, ids[i])
		mu.Lock()
		r.Users++
		if err != nil {
			r.Failed++
		}
		mu.Unlock()
		if err != nil && svc.Log != nil { // what failed, in the code's words (no memory text is in them)
			svc.Log.WarnContext(ctx, "history roll-up failed; the next run tries again", "code", string(errs.CodeOf(err)), "error", err.Error())
		}
	})
	return !cut
}

// newIDs are those of ids not in done, once each; they are added to it.
func newIDs(ids []string, done map[string]bool) []string {
	var out []string
	for _, id := range ids {
		if !done[id] {
			done[id] = true
			out = append(out, id)
		}
	}
	return out
}

// rollUpTally counts what a run's roll-ups cost, from their context.
type rollUpTally struct{ sessions, written, model atomic.Int64 }

type tallyKey struct{}

// tallyOf is ctx's tally (one that counts for nobody outside a run).
func tallyOf(ctx context.Context) *rollUpTally {
	if t, ok := ctx.Value(tallyKey{}).(*rollUpTally); ok {
		return t
	}
	return &rollUpTally{}
}

func (t *rollUpTally) into(r *RollUpReport) {
	r.SessionsRead, r.Written, r.ModelCalls = int(t.sessions.Load()), int(t.written.Load()), int(t.model.Load())
}
