package retention

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/chatmemory/backend/kernel/rpcs"
	"github.com/chatmemory/backend/sessions"
)

// Report is what one run did (or, dry, would do).
type Report struct {
	DryRun           bool `json:"dryRun"`
	SoftDeleted      int  `json:"sessionsSoftDeleted"`
	Purged           int  `json:"sessionsPurged"`
	ResumedPurges    int  `json:"purgesResumed"`
	DocumentsDeleted int  `json:"documentsDeleted"`
	Skipped          int  `json:"skipped"`    // active again, or handled by a concurrent sweep
	PurgesBusy       int  `json:"purgesBusy"` // cut-off purges another sweep holds
	Failed           int  `json:"failed"`
	// SessionsTrimmed are the sessions whose oldest messages message
	// retention deleted; MessagesDeleted those messages (not counted in
	// DocumentsDeleted, which purges delete).
	SessionsTrimmed int  `json:"sessionsTrimmed"`
	MessagesDeleted int  `json:"messagesDeleted"`
	Complete        bool `json:"complete"`
	// DurationMs is the whole run's wall time, from its start to the end
	// of its last phase (from the process's start when cmd/sweep runs it,
	// so what an operator or the scheduler waits for); its Phases add up
	// to it plus OverlapMs, the time phases run at once counted twice.
	DurationMs      int64   `json:"durationMs"`
	OverlapMs       int64   `json:"overlapMs"`
	DocumentsPerSec float64 `json:"documentsPerSecond"`
	SessionsPerSec  float64 `json:"sessionsPerSecond"` // soft-deleted and purged, over DurationMs
	// Phases are where the run's time went, in order, each with when it
	// began, what it did and its round trips; they add up to DurationMs
	// plus OverlapMs (see PhasePurge and the others).
	Phases []Phase `json:"phases"`
	// RPCs are the run's round trips to the store, the sum of its phases'
	// (counted where the store's client counts them, see rpcs; 0 on the
	// in-process store).
	RPCs int64 `json:"rpcs"`
	// Time spent on each kind of work (the kinds take turns), as in Phases
	// (PurgeMs includes resumed purges).
	PurgeMs      int64 `json:"purgeMs"`
	SoftDeleteMs int64 `json:"softDeleteMs"`
	TrimMs       int64 `json:"trimMs"`
	// Backlog is what is still due after the run: sessions to soft-delete,
	// sessions to purge and cut-off purges, counted by aggregation queries.
	Backlog *Backlog `json:"backlog,omitempty"`
	// BacklogChange is Backlog's total minus the previous run's: above 0,
	// the sweep is falling behind.
	BacklogChange *int     `json:"backlogChange,omitempty"`
	Planned       []Action `json:"planned,omitempty"` // dry runs: what would change
	// PlannedTrims are the histories a dry run would trim.
	PlannedTrims []TrimAction `json:"plannedTrims,omitempty"`

	now       func() time.Time // the run's clock, for its phases
	origin    time.Time        // when the run started
	lapped    time.Time        // when the last phase ended
	rpcs      *rpcs.Counter    // the run's round trips, for its phases
	rpcLapped int64            // rpcs at the last lap
}

// Backlog is what is due and not done.
type Backlog struct {
	ToSoftDelete  int `json:"toSoftDelete"`
	ToPurge       int `json:"toPurge"`
	PurgesPending int `json:"purgesPending"`
	// ToTrim are sessions whose oldest messages are due (one with a
	// period of its own shorter than the service's may count twice).
	ToTrim int `json:"toTrim"`
}

// Action is one change a dry run would make.
type Action struct {
	SessionID string          `json:"sessionId"`
	From      sessions.Status `json:"from"`
	To        sessions.Status `json:"to"`
	// Since is when the session entered its status (its last activity,
	// for an active one); ExpiresAt is when the action became due.
	Since     time.Time `json:"since"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (sw *Sweeper) log(ctx context.Context, r *Report, err error) {
	if sw.Log == nil {
		return
	}
	attrs := []any{"dryRun", r.DryRun, "sessionsSoftDeleted", r.SoftDeleted, "sessionsPurged", r.Purged,
		"purgesResumed", r.ResumedPurges, "documentsDeleted", r.DocumentsDeleted, "skipped", r.Skipped,
		"purgesBusy", r.PurgesBusy, "failed", r.Failed, "sessionsTrimmed", r.SessionsTrimmed, "messagesDeleted", r.MessagesDeleted, "complete", r.Complete, "durationMs", r.DurationMs,
		"documentsPerSecond", round1(r.DocumentsPerSec), "sessionsPerSecond", round1(r.SessionsPerSec)}
	if r.Backlog != nil {
		attrs = append(attrs, "backlogToSoftDelete", r.Backlog.ToSoftDelete, "backlogToPurge", r.Backlog.ToPurge,
			"backlogPurgesPending", r.Backlog.PurgesPending, "backlogToTrim", r.Backlog.ToTrim)
	}
	if r.BacklogChange != nil {
		attrs = append(attrs, "backlogChange", *r.BacklogChange)
	}
	if r.DryRun {
		attrs = append(attrs, "planned", len(r.Planned), "plannedTrims", len(r.PlannedTrims))
	}
	switch {
	case err != nil:
		sw.Log.ErrorContext(ctx, "retention sweep failed", append(attrs, "error", err.Error())...)
	case !r.DryRun && r.Backlog != nil && r.Backlog.Total() > 0:
		// Behind: say by how much, and how many runs at this rate it takes.
		runs := "unknown"
		if perRun := r.SoftDeleted + r.Purged + r.ResumedPurges + r.SessionsTrimmed; perRun > 0 {
			runs = strconv.Itoa((r.Backlog.Total() + perRun - 1) / perRun)
		}
		sw.Log.WarnContext(ctx, "retention sweep did not finish its backlog", append(attrs,
			"behindSessions", r.Backlog.Total(), "runsToCatchUpAtThisRate", runs)...)
	default:
		sw.Log.InfoContext(ctx, "retention sweep", attrs...)
	}
}

// Total is the backlog in sessions.
func (b Backlog) Total() int { return b.ToSoftDelete + b.ToPurge + b.PurgesPending + b.ToTrim }

func round1(f float64) float64 { return math.Round(f*10) / 10 }
