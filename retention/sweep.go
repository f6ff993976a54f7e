// Package retention carries out the retention policy and the owner's
// privacy rights: the scheduled sweep that soft-deletes idle and long-archived
// sessions and purges long-deleted ones, export of everything a user owns,
// and erasure of all of it.
package retention

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// Repo is the storage the sweep needs.
type Repo interface {
	// ExpiredSessions returns up to limit sessions in status whose
	// ExpiresAt is at or before now, by ExpiresAt then ID, after cursor.
	ExpiredSessions(ctx context.Context, status sessions.Status, now time.Time, after *Cursor, limit int) ([]*sessions.Session, error)
	UpdateSession(ctx context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error)
	PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error)
	// PendingPurges returns the ids of sessions whose purge was cut off.
	PendingPurges(ctx context.Context, limit int) ([]string, error)
	// ResumePurge finishes such a purge, forget included, and returns the
	// documents deleted.
	ResumePurge(ctx context.Context, id string, forget sessions.Forget) (int, error)
}

// Cursor is the position after which an expired-session page starts.
type Cursor struct {
	ExpiresAt time.Time
	ID        string
}

// Sweeper runs the retention sweep.
type Sweeper struct {
	Repo   Repo
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
}

// Report is what one run did (or, dry, would do).
type Report struct {
	DryRun           bool     `json:"dryRun"`
	SoftDeleted      int      `json:"sessionsSoftDeleted"`
	Purged           int      `json:"sessionsPurged"`
	ResumedPurges    int      `json:"purgesResumed"`
	DocumentsDeleted int      `json:"documentsDeleted"`
	Skipped          int      `json:"skipped"` // active again, or handled by a concurrent sweep
	Failed           int      `json:"failed"`
	Complete         bool     `json:"complete"`
	DurationMs       int64    `json:"durationMs"`
	Planned          []Action `json:"planned,omitempty"` // dry runs: what would change
}

// Action is one change a dry run would make.
type Action struct {
	SessionID string          `json:"sessionId"`
	From      sessions.Status `json:"from"`
	To        sessions.Status `json:"to"`
	ExpiresAt time.Time       `json:"expiresAt"`
}

// NewSweeper returns a sweeper with the default policy, the system clock,
// pages of 100 and a budget of eight minutes (Cloud Functions allow nine).
func NewSweeper(repo Repo) *Sweeper {
	return &Sweeper{Repo: repo, Policy: sessions.DefaultPolicy(), Now: time.Now, Budget: 8 * time.Minute, PageSize: 100}
}

// errSkip ends a transaction that found the session no longer due.
var errSkip = errors.New("retention: no longer due")

// stopMargin is the share of the budget kept back to stop cleanly.
const stopMargin = 10

// Run sweeps once. It is idempotent: a session already handled (by an
// earlier or a concurrent run) is skipped, and a session that saw activity
// between the query and the write is left alone, as each change re-checks
// the session inside its transaction. A cancelled context or a spent budget
// ends the run cleanly with Complete false.
func (sw *Sweeper) Run(ctx context.Context, dryRun bool) (*Report, error) {
	start := time.Now()
	elapsed := sw.Elapsed
	if elapsed == nil {
		elapsed = time.Since
	}
	budget := sw.Budget - sw.Budget/stopMargin
	r := &Report{DryRun: dryRun}
	out := func() bool { return ctx.Err() != nil || (sw.Budget > 0 && elapsed(start) >= budget) }
	now := sessions.Clock(sw.Now)
	err := sw.resumePurges(ctx, r, dryRun, out)
	for _, step := range []struct {
		from   sessions.Status
		action sessions.Action
	}{
		{sessions.StatusActive, sessions.ActionDelete},
		{sessions.StatusArchived, sessions.ActionDelete},
		{sessions.StatusDeleted, sessions.ActionPurge},
	} {
		if err != nil {
			break
		}
		err = sw.sweepStatus(ctx, r, now, step.from, step.action, dryRun, out)
	}
	r.DurationMs = time.Since(start).Milliseconds()
	if errors.Is(err, errOutOfTime) || (err != nil && ctx.Err() != nil) {
		err = nil
	} else if err == nil {
		r.Complete = true
	}
	sw.log(ctx, r, err)
	return r, err
}

var errOutOfTime = errors.New("retention: out of time")

func (sw *Sweeper) pageSize() int {
	if sw.PageSize > 0 {
		return sw.PageSize
	}
	return 100
}

func (sw *Sweeper) resumePurges(ctx context.Context, r *Report, dryRun bool, out func() bool) error {
	if dryRun {
		return nil
	}
	for {
		ids, err := sw.Repo.PendingPurges(ctx, sw.pageSize())
		if err != nil {
			return err
		}
		for _, id := range ids {
			if out() {
				return errOutOfTime
			}
			n, err := sw.Repo.ResumePurge(ctx, id, sw.Forget)
			if err != nil {
				return err
			}
			r.ResumedPurges++
			r.DocumentsDeleted += n
		}
		if len(ids) < sw.pageSize() {
			return nil
		}
	}
}

// sweepStatus applies action to every session in status that is due at now.
func (sw *Sweeper) sweepStatus(ctx context.Context, r *Report, now time.Time, status sessions.Status, action sessions.Action, dryRun bool, out func() bool) error {
	var cur *Cursor
	for {
		if out() {
			return errOutOfTime
		}
		page, err := sw.Repo.ExpiredSessions(ctx, status, now, cur, sw.pageSize())
		if err != nil {
			return err
		}
		for _, s := range page {
			if out() {
				return errOutOfTime
			}
			if dryRun {
				to, _ := sessions.Next(s.Status, action)
				r.Planned = append(r.Planned, Action{SessionID: s.ID, From: s.Status, To: to, ExpiresAt: s.ExpiresAt})
				continue
			}
			if err := sw.apply(ctx, r, now, s.ID, status, action); err != nil {
				if ctx.Err() != nil {
					return err
				}
				r.Failed++
				sw.logSession(ctx, s.ID, err)
			}
		}
		if len(page) < sw.pageSize() {
			return nil
		}
		last := page[len(page)-1]
		cur = &Cursor{ExpiresAt: last.ExpiresAt, ID: last.ID}
	}
}

// due is the check made inside each change's transaction.
func due(s *sessions.Session, status sessions.Status, now time.Time) error {
	if s.Status != status || s.ExpiresAt.After(now) {
		return errSkip
	}
	return nil
}

func (sw *Sweeper) apply(ctx context.Context, r *Report, now time.Time, id string, status sessions.Status, action sessions.Action) error {
	var err error
	if action == sessions.ActionPurge {
		var n int
		n, err = sw.Repo.PurgeSession(ctx, id, func(s *sessions.Session) error {
			if err := due(s, status, now); err != nil {
				return err
			}
			return s.Apply(sessions.ActionPurge, now, sw.Policy)
		}, sw.Forget)
		if err == nil {
			r.Purged++
			r.DocumentsDeleted += n
		}
	} else {
		_, err = sw.Repo.UpdateSession(ctx, id, func(s *sessions.Session) error {
			if err := due(s, status, now); err != nil {
				return err
			}
			return s.Apply(action, now, sw.Policy)
		})
		if err == nil {
			r.SoftDeleted++
		}
	}
	if errors.Is(err, errSkip) || sessions.ErrorCode(err) == sessions.ENOTFOUND {
		r.Skipped++
		return nil
	}
	return err
}

func (sw *Sweeper) log(ctx context.Context, r *Report, err error) {
	if sw.Log == nil {
		return
	}
	attrs := []any{"dryRun", r.DryRun, "sessionsSoftDeleted", r.SoftDeleted, "sessionsPurged", r.Purged,
		"purgesResumed", r.ResumedPurges, "documentsDeleted", r.DocumentsDeleted, "skipped", r.Skipped,
		"failed", r.Failed, "complete", r.Complete, "durationMs", r.DurationMs}
	if r.DryRun {
		attrs = append(attrs, "planned", len(r.Planned))
	}
	if err != nil {
		sw.Log.ErrorContext(ctx, "retention sweep failed", append(attrs, "error", err.Error())...)
		return
	}
	sw.Log.InfoContext(ctx, "retention sweep", attrs...)
}

func (sw *Sweeper) logSession(ctx context.Context, id string, err error) {
	if sw.Log != nil {
		sw.Log.WarnContext(ctx, "retention: a session could not be swept; the next run tries again", "sessionId", id, "error", err.Error())
	}
}
