package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/rpcs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/storage"
)

// Jobs are what an App runs besides serving, and what only they use: the
// retention sweep, its backstop for accounts deleted in Auth, and the
// store itself (for the backfill of the recall index and the migration
// of what earlier versions stored). The work after replies, the roll-up
// of histories and the erasure of accounts go through the services.
type Jobs struct {
	Sweeper  *retention.Sweeper
	Backstop *retention.Backstop // nil: no Directory to ask
	Store    storage.Store
}

// PhaseOpen names, in a sweep's report, what a command did before the
// run: its start, configuration and clients (see retention.Report.Before).
const PhaseOpen = retention.PhaseOpen

// Sweep runs the retention sweep (see retention.Sweeper.Run), and at once
// beside it the after-turn jobs left due, and the deleted-account
// backstop and then the roll-up of histories (see besideRetention), then
// the sweep of unreferenced uploads; it records its progress and backlog
// as metrics (a dry run records nothing and runs only the sweep). The
// report's phases are all of them, each with its own time and round
// trips to the store, its total the run's wall time (see retention.Phase).
func (a *App) Sweep(ctx context.Context, dry bool) (*retention.Report, error) {
	start := time.Now()
	var beside chan besideReport
	if !dry {
		beside = make(chan besideReport, 1)
		go func(ctx context.Context) { beside <- a.besideRetention(ctx, start) }(ctx)
	}
	jobs := make(chan dueJobsReport, 1)
	go func(ctx context.Context) { jobs <- a.dueJobs(ctx, dry) }(ctx)
	ctx, _ = rpcs.With(ctx) // the retention's phases' round trips (the goroutines' ctx is their own)
	report, err := a.Sweeper.Run(ctx, dry)
	// The jobs ran from start, beside the retention work: the run starts
	// with them, as the phases beside it do.
	j := <-jobs
	report.First(retention.PhaseDueJobs, start, j.took, j.rpcs, map[string]int{"found": j.Found, "ran": j.Ran, "held": j.Held, "failed": j.Failed})
	if dry {
		report.Lap(retention.PhaseBackstop, nil)
		report.Lap(retention.PhaseRollUp, nil)
		report.Lap(retention.PhaseAttachments, nil)
		return report, err
	}
	b := <-beside
	report.Beside(retention.PhaseBackstop, b.began, b.backstopTook, b.backstopRPCs, b.backstop.Counts())
	report.Beside(retention.PhaseRollUp, b.began.Add(b.backstopTook), b.rollUpTook, b.rollUpRPCs, b.rolled.Counts())
	report.Resume() // the next phase runs from here, after both
	report.Lap(retention.PhaseAttachments, a.sweepFiles(ctx))
	a.Edge.Metrics.Sweep(ctx, report)
	return report, err
}

// dueJobsReport is what the after-turn jobs left due did, their time and
// round trips.
type dueJobsReport struct {
	chat.JobsReport
	took time.Duration
	rpcs int64
}

// dueJobs runs the after-turn jobs left due (none in a dry run), counting
// its own round trips. They run at once with the retention work: a job
// of a session a purge deletes meanwhile is dropped, as every change a job
// makes reads its session, or its job, in its transaction.
func (a *App) dueJobs(ctx context.Context, dry bool) dueJobsReport {
	start := time.Now()
	if dry {
		return dueJobsReport{}
	}
	ctx, counted := rpcs.With(ctx)
	r := a.RunDueJobs(ctx)
	return dueJobsReport{JobsReport: r, took: time.Since(start), rpcs: counted.Load()}
}

// besideReport is what ran beside the retention work, with its times and
// round trips.
type besideReport struct {
	began                    time.Time
	backstop                 retention.BackstopReport
	rolled                   longterm.RollUpReport
	backstopTook, rollUpTook time.Duration // from began
	backstopRPCs, rollUpRPCs int64
}

// besideRetention runs, within what is left of the sweep's budget since
// start (at least a tenth of it), the deleted-account backstop, then the
// roll-up of histories (if on), each counting its own round trips. They
// run at once with the retention work, which touches other documents:
// sessions due and what is under them, where the backstop erases accounts
// deleted in Auth (which an account's deletion event may do at any moment
// of a sweep too) and the roll-up reads active and archived sessions and
// writes users' memory (which a purge's forgetting also changes, in a
// transaction: whichever commits second reads the first's change again).
func (a *App) besideRetention(ctx context.Context, start time.Time) besideReport {
	r := besideReport{began: start}
	left := func() time.Duration { return max(a.Sweeper.Budget-time.Since(start), a.Sweeper.Budget/10) }
	bctx, counted := rpcs.With(ctx)
	r.backstop = a.EraseDeletedAccounts(bctx, left())
	r.backstopTook, r.backstopRPCs = time.Since(r.began), counted.Load()
	if a.rollUps {
		rctx, counted := rpcs.With(ctx)
		rolled := time.Now()
		r.rolled = a.RollUpHistories(rctx, left())
		r.rollUpTook, r.rollUpRPCs = time.Since(rolled), counted.Load()
	}
	return r
}

// sweepFiles deletes the uploads no message named within a day (see
// attachments.Service.SweepUnreferenced), within a tenth of the sweep's
// budget (none: no limit), and counts them.
func (a *App) sweepFiles(ctx context.Context) map[string]int {
	if a.Attachments == nil {
		return nil
	}
	deadline := time.Now().Add(a.Sweeper.Budget / 10)
	out := func() bool { return ctx.Err() != nil || a.Sweeper.Budget > 0 && time.Now().After(deadline) }
	n, err := a.Attachments.SweepUnreferenced(ctx, clock.Stored(a.Sweeper.Now), out)
	failed := 0
	if err != nil {
		failed = 1
		if a.Sweeper.Log != nil {
			a.Sweeper.Log.ErrorContext(ctx, "sweep: unreferenced attachments", "error", err.Error())
		}
	}
	return map[string]int{"deleted": n, "failed": failed}
}

// dueJobsPerSweep bounds the after-turn jobs one sweep runs.
const dueJobsPerSweep = 1000

// RunDueJobs runs the after-turn jobs that neither their turn nor the
// trigger on their creation finished (see chat.Service.RunDueJobs), and
// logs what it did.
func (a *App) RunDueJobs(ctx context.Context) chat.JobsReport {
	start := time.Now()
	r, err := a.Chat.RunDueJobs(ctx, dueJobsPerSweep)
	attrs := []any{"found", r.Found, "ran", r.Ran, "held", r.Held, "failed", r.Failed, "durationMs", time.Since(start).Milliseconds()}
	if err != nil {
		a.Edge.Log.ErrorContext(ctx, "after-turn jobs failed", append(attrs, "error", err.Error())...)
	} else if r.Found > 0 {
		a.Edge.Log.InfoContext(ctx, "after-turn jobs", attrs...)
	}
	return r
}

// RollUpHistories rolls users' episodic histories forward (see
// longterm.Service.RollUpDue) within budget (0: none), charging each
// user's day with the tokens their roll-up spent, and logs what it did.
func (a *App) RollUpHistories(ctx context.Context, budget time.Duration) longterm.RollUpReport {
	start := time.Now()
	out := func() bool { return ctx.Err() != nil || (budget > 0 && time.Since(start) >= budget-budget/10) }
	r, err := a.Memory.RollUpDue(ctx, func(ctx context.Context, userID string) error {
		ctx, meter := chat.WithMeter(ctx)
		defer func() { a.Chat.ChargeMemory(ctx, userID, meter.Tokens()) }()
		return a.Memory.RollUp(ctx, userID)
	}, out)
	attrs := []any{"users", r.Users, "failed", r.Failed, "complete", r.Complete, "durationMs", time.Since(start).Milliseconds()}
	if err != nil {
		a.Edge.Log.ErrorContext(ctx, "history roll-up failed", append(attrs, "error", err.Error())...)
	} else {
		a.Edge.Log.InfoContext(ctx, "history roll-up", attrs...)
	}
	return r
}

// Backfill embeds the exchanges stored before embeddings were on (see
// recall.Backfill), after the session id after, in requests of batch
// exchanges, at most rate a second; progress gets a line every few
// seconds. ErrEmbeddingsOff when embeddings are off.
func (a *App) Backfill(ctx context.Context, after string, batch int, rate float64, progress io.Writer) (recall.BackfillReport, error) {
	if a.Recall == nil {
		return recall.BackfillReport{}, ErrEmbeddingsOff
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	first := true
	b := &recall.Backfill{Embedder: a.Recall.Embedder, Store: a.Store, Batch: batch, Wait: func(ctx context.Context) error {
		if first { // the first request goes at once
			first = false
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			return nil
		}
	}}
	fmt.Fprintf(progress, "embedding with %s, at most %g requests a second of %d exchanges\n", b.Embedder.Model(), rate, batch)
	last := time.Now()
	return b.Run(ctx, after, func(r recall.BackfillReport) {
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Fprintf(progress, "%d sessions, %d exchanges embedded, %d skipped, %d failed; after %s\n", r.Sessions, r.Embedded, r.Skipped, r.Failed, r.After)
		}
	})
}

// ErrEmbeddingsOff is Backfill's answer when EMBEDDINGS=off.
var ErrEmbeddingsOff = errors.New("embeddings are off (EMBEDDINGS=off): nothing to backfill")

// Migrate brings what earlier versions stored in Firestore to this
// version's layout (see firestoredb.DB.Migrate), after the session id
// after; progress gets a line every few seconds. The in-process store has
// nothing to migrate.
func (a *App) Migrate(ctx context.Context, after string, progress io.Writer) (firestoredb.MigrateReport, error) {
	store := a.Store
	if c, ok := store.(*cache.Store); ok {
		store = c.Source // the migration's writes go straight to Firestore; it serves no turns
	}
	db, ok := store.(*firestoredb.DB)
	if !ok {
		fmt.Fprintln(progress, "the in-process store holds nothing from earlier versions")
		return firestoredb.MigrateReport{After: after}, nil
	}
	last := time.Now()
	return db.Migrate(ctx, after, func(r firestoredb.MigrateReport) {
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Fprintf(progress, "%d sessions, %d contexts moved, %d units retitled; after %s\n", r.Sessions, r.Contexts, r.Units, r.After)
		}
	})
}
