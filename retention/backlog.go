package retention

import (
	"context"
	"errors"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// measureBacklog says what is still due after the run and compares it
// with the previous run's backlog. A run that completed with nothing
// failed and no purge left to another sweep knows it without counting:
// every session due at now was found by its queries (each kind's went to
// its end) and then handled, or found no longer due; so it is 0 (a
// session made due for a moment already past during the run, by a shorter
// period of its own set meanwhile, shows in the next run's backlog).
// Otherwise it counts by aggregation queries (see countBacklog). A
// failure to count is logged: the run's work is done either way.
func (sw *Sweeper) measureBacklog(ctx context.Context, r *Report, now time.Time) {
	var b Backlog
	if !r.Complete || r.Failed > 0 || r.PurgesBusy > 0 {
		var ok bool
		if b, ok = sw.countBacklog(ctx, now); !ok {
			return
		}
	}
	r.Backlog = &b
	if prev, _, ok, err := sw.Store.LastBacklog(ctx); err == nil && ok {
		change := b.Total() - prev
		r.BacklogChange = &change
	}
	if err := sw.Store.SaveBacklog(ctx, b.Total(), now); err != nil && sw.Log != nil {
		sw.Log.WarnContext(ctx, "retention: could not record the backlog", "error", err.Error())
	}
}

// countBacklog counts what is due at now: sessions to soft-delete and to
// purge, cut-off purges and histories to trim (one read per thousand
// counted, no scan); false if a count failed (logged).
func (sw *Sweeper) countBacklog(ctx context.Context, now time.Time) (Backlog, bool) {
	var b Backlog
	var failures []error
	for _, c := range []struct {
		status sessions.Status
		n      *int
	}{{sessions.StatusActive, &b.ToSoftDelete}, {sessions.StatusArchived, &b.ToSoftDelete}, {sessions.StatusDeleted, &b.ToPurge}} {
		n, err := sw.Store.CountExpired(ctx, c.status, now)
		*c.n += n
		failures = append(failures, err)
	}
	pending, err := sw.Store.CountPendingPurges(ctx)
	b.PurgesPending = pending
	failures = append(failures, err)
	for _, k := range sw.trimKinds(now) {
		n, err := sw.Store.CountHistoriesDue(ctx, k.q)
		b.ToTrim += n
		failures = append(failures, err)
	}
	if err := errors.Join(failures...); err != nil {
		if sw.Log != nil {
			sw.Log.WarnContext(ctx, "retention: could not count the backlog", "error", err.Error())
		}
		return b, false
	}
	return b, true
}
