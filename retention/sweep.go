// Package retention carries out the retention policy and the owner's
// privacy rights: the scheduled sweep that soft-deletes idle and long-archived
// sessions, purges long-deleted ones and deletes messages past their
// retention period, export of everything a user owns,
// and erasure of all of it.
package retention

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/kernel/rpcs"
	"github.com/chatmemory/backend/sessions"
)

// Store is the storage the sweep needs.
type Store interface {
	// ExpiredSessions returns up to limit sessions in status whose
	// ExpiresAt is at or before now, by ExpiresAt then ID, after cursor.
	ExpiredSessions(ctx context.Context, status sessions.Status, now time.Time, after *Cursor, limit int) ([]*sessions.Session, error)
	// CountExpired counts the sessions ExpiredSessions would list (an
	// aggregation, not a scan).
	CountExpired(ctx context.Context, status sessions.Status, now time.Time) (int, error)
	UpdateSession(ctx context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error)
	// UpdateSessions changes sessions of one user together, each as
	// UpdateSession would (fn's error, or NotFound, is that session's and
	// leaves it as it was); the second error is the whole call's.
	UpdateSessions(ctx context.Context, userID string, ids []string, fn func(*sessions.Session) error) ([]error, error)
	// PurgeSessions purges each session as sessions.Store.PurgeSession
	// does, many at a time, and reports each one's outcome.
	PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []Purged
	// PendingPurges returns up to limit ids of sessions whose purge was
	// cut off, by id, after the id after ("" for the first page).
	PendingPurges(ctx context.Context, after string, limit int) ([]string, error)
	// CountPendingPurges counts them.
	CountPendingPurges(ctx context.Context) (int, error)
	// ResumePurges finishes such purges, forget included, many at a time;
	// a purge another sweep is running is left to it (EPRECONDITION).
	ResumePurges(ctx context.Context, ids []string, forget sessions.Forget) []Purged
	// LastBacklog returns the backlog the previous run left (ok false if
	// there was none); SaveBacklog records this run's.
	LastBacklog(ctx context.Context) (n int, at time.Time, ok bool, err error)
	SaveBacklog(ctx context.Context, n int, at time.Time) error
	TrimStore
}

// Purged is the outcome of one purge: the documents it deleted (not its
// units of search, deleted by name unseen), or why not.
type Purged struct {
	SessionID string
	Documents int
	Err       error
}

// Cursor is the position after which an expired-session page starts.
type Cursor struct {
	ExpiresAt time.Time
	ID        string
}

// Sweeper runs the retention sweep.
type Sweeper struct {
	Store  Store
	Policy sessions.Policy
	Now    func() time.Time // the policy's clock
	// Budget is how long one run may take; it stops cleanly with a margin
	// and reports Complete false, and the next run continues.
	Budget   time.Duration
	PageSize int
	Log      *slog.Logger
	// Elapsed measures the run against Budget (real time).
	Elapsed func(start time.Time) time.Duration
	// Forget removes what was derived from each purged session.
	Forget sessions.Forget
	// ForgetFiles deletes the user's attachments the messages a trim
	// deleted carried, after each page's commit (nil: none are kept).
	ForgetFiles func(ctx context.Context, userID string, ids []string) error
	// TrimPageSize is how many messages one write of a trim deletes (0:
	// 200, with their recall exchanges under Firestore's 500 writes).
	TrimPageSize int
}

// NewSweeper returns a sweeper with the default policy, the system clock,
// pages of 500 and a budget of eight minutes (Cloud Functions allow nine).
func NewSweeper(repo Store) *Sweeper {
	return &Sweeper{Store: repo, Policy: sessions.DefaultPolicy(), Now: time.Now, Budget: 8 * time.Minute, PageSize: 500}
}

// Run sweeps once. Cut-off purges are finished first; then the kinds of
// work (purges of sessions past their recovery window, soft-deletes of
// idle and of long-archived sessions, trims of histories past their
// message retention) take turns a page at a time, so
// every kind progresses in every run however large another's backlog. It
// is idempotent: a session already handled (by an earlier or a concurrent
// run) is skipped, and a session that saw activity between the query and
// the write is left alone, as each change re-checks the session inside its
// transaction. A cancelled context or a spent budget ends the run cleanly
// with Complete false.
func (sw *Sweeper) Run(ctx context.Context, dryRun bool) (*Report, error) {
	r := &Report{DryRun: dryRun}
	r.CountRPCs(rpcs.Of(ctx))
	r.StartClock(nil)
	start := time.Now()
	elapsed := sw.Elapsed
	if elapsed == nil {
		elapsed = time.Since
	}
	budget := sw.Budget - sw.Budget/stopMargin
	out := func() bool { return ctx.Err() != nil || (sw.Budget > 0 && elapsed(start) >= budget) }
	now := clock.Stored(sw.Now)
	for _, name := range []string{PhaseResumePurges, PhasePurge, PhaseSoftDelete, PhaseTrim} {
		r.AddPhase(name, 0, r.since(r.counters(), phaseCounts(name, dryRun)...)) // every phase shown, in order
	}
	kinds := []*work{
		{status: sessions.StatusDeleted, action: sessions.ActionPurge},
		{status: sessions.StatusActive, action: sessions.ActionDelete},
		{status: sessions.StatusArchived, action: sessions.ActionDelete},
	}
	defer sw.ahead(ctx, kinds, now)()
	err := sw.lap(r, PhaseResumePurges, func() error { return sw.resumePurges(ctx, r, dryRun, out) })
	trims := sw.trimKinds(now)
	for left := 1; err == nil && left > 0; {
		left = 0
		for _, k := range kinds {
			if k.done {
				continue
			}
			if err = sw.lap(r, k.phase(), func() error { return sw.page(ctx, r, now, k, dryRun, out) }); err != nil {
				break
			}
			if !k.done {
				left++
			}
		}
		for _, k := range trims {
			if err != nil || k.done {
				continue
			}
			if err = sw.lap(r, PhaseTrim, func() error { return sw.trimPage(ctx, r, now, k, dryRun, out) }); err == nil && !k.done {
				left++
			}
		}
	}
	if errors.Is(err, errOutOfTime) || (err != nil && ctx.Err() != nil) {
		err = nil
	} else if err == nil {
		r.Complete = true
	}
	if !dryRun {
		sw.measureBacklog(context.WithoutCancel(ctx), r, now)
	}
	r.Lap(PhaseBacklog, r.Backlog.counts())
	sw.log(ctx, r, err)
	return r, err
}

// lap runs one step of the phase called name and adds its time and what
// it counted to the phase.
func (sw *Sweeper) lap(r *Report, name string, step func() error) error {
	before := r.counters()
	err := step()
	r.Lap(name, r.since(before, phaseCounts(name, r.DryRun)...))
	return err
}

// phaseCounts are what a phase of the sweep's own reports it did.
func phaseCounts(name string, dryRun bool) []string {
	var keys []string
	switch name {
	case PhaseResumePurges:
		keys = []string{"purgesResumed", "purgesBusy", "documentsDeleted", "failed"}
	case PhasePurge:
		keys = []string{"sessionsPurged", "documentsDeleted", "skipped", "failed"}
	case PhaseSoftDelete:
		keys = []string{"sessionsSoftDeleted", "skipped", "failed"}
	case PhaseTrim:
		keys = []string{"sessionsTrimmed", "messagesDeleted", "failed"}
	}
	if dryRun {
		keys = append(keys, "planned")
	}
	return keys
}

// phase is the phase k's pages add to.
func (k *work) phase() string {
	if k.action == sessions.ActionPurge {
		return PhasePurge
	}
	return PhaseSoftDelete
}

func (sw *Sweeper) resumePurges(ctx context.Context, r *Report, dryRun bool, out func() bool) error {
	if dryRun {
		return nil
	}
	after := ""
	for {
		if out() {
			return errOutOfTime
		}
		ids, err := sw.Store.PendingPurges(ctx, after, sw.pageSize())
		if err != nil || len(ids) == 0 {
			return err
		}
		after = ids[len(ids)-1]
		purged := sw.Store.ResumePurges(ctx, ids, sw.Forget)
		for _, p := range purged {
			r.DocumentsDeleted += p.Documents // what was deleted, even by a purge that then failed
			switch code := errs.CodeOf(p.Err); {
			case p.Err == nil:
				r.ResumedPurges++
			case code == errs.ENOTFOUND: // finished meanwhile
				r.Skipped++
			case code == errs.EPRECONDITION:
				r.PurgesBusy++
			case ctx.Err() != nil:
			default:
				r.Failed++
				sw.logSession(ctx, p.SessionID, p.Err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// page handles one page of k's due sessions at now.
func (sw *Sweeper) page(ctx context.Context, r *Report, now time.Time, k *work, dryRun bool, out func() bool) error {
	if out() {
		return errOutOfTime
	}
	page, err := sw.next(ctx, r, k, now)
	if err != nil {
		return err
	}
	// What fits the budget, checked session by session.
	var due []*sessions.Session
	for _, s := range page {
		if out() {
			k.done = false
			break
		}
		due = append(due, s)
	}
	switch {
	case dryRun:
		plan(r, due, k)
	case k.action == sessions.ActionPurge:
		err = sw.purge(ctx, r, due, k, now)
	default:
		err = sw.softDeleteDue(ctx, r, due, k, now)
	}
	if err == nil && len(due) < len(page) {
		return errOutOfTime
	}
	return err
}

// plan reports what a run would do to due, doing nothing.
func plan(r *Report, due []*sessions.Session, k *work) {
	for _, s := range due {
		to, _ := sessions.Next(s.Status, k.action)
		r.Planned = append(r.Planned, Action{SessionID: s.ID, From: s.Status, To: to, Since: since(s), ExpiresAt: s.ExpiresAt})
	}
}

// purge purges due, each on condition that it is still due, and counts
// every outcome before it returns the first that ends the run.
func (sw *Sweeper) purge(ctx context.Context, r *Report, due []*sessions.Session, k *work, now time.Time) error {
	ids := make([]string, len(due))
	for i, s := range due {
		ids[i] = s.ID
	}
	check := func(s *sessions.Session) error {
		if err := isDue(s, k.status, now); err != nil {
			return err
		}
		return s.Apply(sessions.ActionPurge, now, sw.Policy)
	}
	var fatal error
	for _, p := range sw.Store.PurgeSessions(ctx, ids, check, sw.Forget) {
		r.DocumentsDeleted += p.Documents
		if err := sw.tally(ctx, r, p.SessionID, p.Err, &r.Purged); err != nil && fatal == nil {
			fatal = err
		}
	}
	return fatal
}

// softDeleteDue moves due on in their lifecycle (archives or deletes
// them), and counts every outcome before it returns the first that ends
// the run.
func (sw *Sweeper) softDeleteDue(ctx context.Context, r *Report, due []*sessions.Session, k *work, now time.Time) error {
	failures := sw.softDelete(ctx, due, k, now)
	var fatal error
	for i, s := range due {
		if err := sw.tally(ctx, r, s.ID, failures[i], &r.SoftDeleted); err != nil && fatal == nil {
			fatal = err
		}
	}
	return fatal
}

// errSkip ends a transaction that found the session no longer due.
var errSkip = errors.New("retention: no longer due")

// stopMargin is the share of the budget kept back to stop cleanly.
const stopMargin = 10

// softDeleteWorkers is how many soft-deletes run at once (each is a
// transaction on its own session, so they do not contend).
const softDeleteWorkers = 16

// work is one kind of due work: sessions in a status, and what to do.
type work struct {
	status    sessions.Status
	action    sessions.Action
	cursor    *Cursor
	queued    []*sessions.Session // found due and not handled yet
	exhausted bool                // no more due sessions past cursor
	done      bool
	// found is the outcome of the kind's first query, started ahead (see
	// ahead), and rpcs its round trips; nil once waited for.
	found chan error
	rpcs  *rpcs.Counter
}

// queryPages is how many pages of due sessions one query finds: a query
// costs a read per session found wherever it is, but its own round trip
// (and, on the emulator, a scan of every session) per call, so a few
// large queries beat many small ones; the sessions are still handled a
// page at a time, each kind in turn.
const queryPages = 10

// ahead starts every kind's first query at once, as the run starts: each
// kind's first page then waits only for what is left of its own query,
// not for the kinds before it to have their turn (on the emulator, each
// query a scan of every session). The sessions found are handled as they
// would be had the query run later: now is the run's, and every change
// checks its session again. The function it returns waits for the
// queries the run did not wait for.
func (sw *Sweeper) ahead(ctx context.Context, kinds []*work, now time.Time) func() {
	for _, k := range kinds {
		k.found = make(chan error, 1)
		var qctx context.Context
		qctx, k.rpcs = rpcs.With(ctx) // added to its phase when waited for
		go func() { k.found <- sw.query(qctx, k, now) }()
	}
	return func() {
		for _, k := range kinds {
			if k.found != nil {
				<-k.found
			}
		}
	}
}

// next returns k's next page of due sessions at now: after its first
// query (started ahead) is done, querying for queryPages pages when none
// is queued.
func (sw *Sweeper) next(ctx context.Context, r *Report, k *work, now time.Time) ([]*sessions.Session, error) {
	if k.found != nil {
		err := <-k.found
		k.found = nil
		r.phase(k.phase()).RPCs += k.rpcs.Load()
		if err != nil {
			return nil, err
		}
	}
	if len(k.queued) == 0 && !k.exhausted {
		if err := sw.query(ctx, k, now); err != nil {
			return nil, err
		}
	}
	n := min(sw.pageSize(), len(k.queued))
	page := k.queued[:n]
	k.queued = k.queued[n:]
	k.done = k.exhausted && len(k.queued) == 0
	return page, nil
}

// query finds up to queryPages pages of k's due sessions at now, after its
// cursor, and queues them.
func (sw *Sweeper) query(ctx context.Context, k *work, now time.Time) error {
	found, err := sw.Store.ExpiredSessions(ctx, k.status, now, k.cursor, queryPages*sw.pageSize())
	if err != nil {
		return err
	}
	if len(found) < queryPages*sw.pageSize() {
		k.exhausted = true
	} else {
		last := found[len(found)-1]
		k.cursor = &Cursor{ExpiresAt: last.ExpiresAt, ID: last.ID}
	}
	k.queued = found
	return nil
}

var errOutOfTime = errors.New("retention: out of time")

func (sw *Sweeper) pageSize() int {
	if sw.PageSize > 0 {
		return sw.PageSize
	}
	return 500
}

// softDeleteBatch is how many of one user's sessions one call of
// UpdateSessions changes at most.
const softDeleteBatch = 100

// softDelete applies k's action to due, in batches of one user's
// sessions each (so that one user's changes do not wait for each other),
// softDeleteWorkers batches at once, and returns each session's outcome.
func (sw *Sweeper) softDelete(ctx context.Context, due []*sessions.Session, k *work, now time.Time) []error {
	type batch struct {
		user string
		at   []int // indexes into due
	}
	var batches []batch
	open := map[string]int{} // user → their batch being filled
	for i, s := range due {
		b, ok := open[s.UserID]
		if !ok || len(batches[b].at) == softDeleteBatch {
			batches = append(batches, batch{user: s.UserID})
			b = len(batches) - 1
			open[s.UserID] = b
		}
		batches[b].at = append(batches[b].at, i)
	}
	failures := make([]error, len(due))
	change := func(s *sessions.Session) error {
		if err := isDue(s, k.status, now); err != nil {
			return err
		}
		return s.Apply(k.action, now, sw.Policy)
	}
	parallel.Each(len(batches), softDeleteWorkers, func(j int) {
		ids := make([]string, len(batches[j].at))
		for n, i := range batches[j].at {
			ids[n] = due[i].ID
		}
		each, err := sw.Store.UpdateSessions(ctx, batches[j].user, ids, change)
		for n, i := range batches[j].at {
			if failures[i] = err; err == nil {
				failures[i] = each[n]
			}
		}
	})
	return failures
}

// tally counts one change's outcome; it returns an error only when the
// run must end (its context is done).
func (sw *Sweeper) tally(ctx context.Context, r *Report, id string, err error, done *int) error {
	switch {
	case err == nil:
		*done++
	case errors.Is(err, errSkip) || errs.CodeOf(err) == errs.ENOTFOUND:
		r.Skipped++
	case ctx.Err() != nil:
		return err
	default:
		r.Failed++
		sw.logSession(ctx, id, err)
	}
	return nil
}

// since is when s entered its status (its last activity, if active).
func since(s *sessions.Session) time.Time {
	switch {
	case s.Status == sessions.StatusArchived && s.ArchivedAt != nil:
		return *s.ArchivedAt
	case s.Status == sessions.StatusDeleted && s.DeletedAt != nil:
		return *s.DeletedAt
	}
	return s.LastActivityAt
}

// isDue is the check made inside each change's transaction.
func isDue(s *sessions.Session, status sessions.Status, now time.Time) error {
	if s.Status != status || s.ExpiresAt.After(now) {
		return errSkip
	}
	return nil
}

func (sw *Sweeper) logSession(ctx context.Context, id string, err error) {
	if sw.Log != nil {
		sw.Log.WarnContext(ctx, "retention: a session could not be swept; the next run tries again", "sessionId", id, "error", err.Error())
	}
}
