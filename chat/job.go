package chat

import (
	"context"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/longterm"
)

// Job is the work that follows a turn's reply (a title, learning, the
// index entry of the exchange, a summary when due, and the charge of
// their tokens: see afterTurn), recorded in the reply's own commit (an
// outbox) so that it is done even when the instance that answered stops
// right after the reply. The turn hands it to its Runner (Service.Runner) under
// the lease the commit gave it; otherwise the store's trigger on the
// job's creation (RunJob) or the retention sweep (RunDueJobs) runs it
// once that lease has run out. Each of its steps is fenced or idempotent
// (the title is set only while the session has none, an exchange's entry
// is stored under its reply's id, a summary is planned from what is
// stored), so a second run after a runner died midway repeats none of
// them; the learning batch was claimed by the reply's commit, and is
// learned again only if a runner died between saving what it learned
// and deleting the job (the facts it finds then are the same ones, which
// learning merges).
type Job struct {
	SessionID string
	ID        string // the reply's id: a reply has one job
	UserID    string
	// UserMessageID is the message the reply answers (a tool result, for
	// a turn that sent them).
	UserMessageID string
	// MemoryTokens are the tokens of the memory block the turn sent: a
	// summary is planned with them counted, as the turn counted them.
	MemoryTokens int
	// Learn is the batch of messages the reply's commit claimed for
	// long-term memory; nil for none.
	Learn     *LearnBatch
	CreatedAt time.Time
	// Runner holds the job until Lease (the turn that wrote it, then
	// whoever claimed it after that ran out).
	Runner string
	Lease  time.Time
}

// LearnBatch is the range of messages a job learns from.
type LearnBatch struct{ From, To int }

// JobStore keeps the outbox of after-turn jobs: a turn's commit creates
// one (TurnWrite.Job); a runner claims it and deletes it when done.
type JobStore interface {
	// ClaimJob gives the job id of session sessionID to runner until
	// lease, unless another runner holds it at now, and returns it.
	// ENOTFOUND: the job is done (or never was); ECONFLICT: another
	// runner holds it.
	ClaimJob(ctx context.Context, sessionID, id, runner string, now, lease time.Time) (*Job, error)
	// FinishJob deletes the job: its work is done.
	FinishJob(ctx context.Context, sessionID, id string) error
	// DueJobs lists at most limit jobs created before before, oldest
	// first.
	DueJobs(ctx context.Context, before time.Time, limit int) ([]Job, error)
}

// JobLease is how long a job is left to the runner holding it: its
// work's timeout (afterTurnTimeout) and a margin.
const JobLease = afterTurnTimeout + 30*time.Second

// JobDelay is how old a job is before the sweep runs it: older than its
// lease, so the turn that wrote it (or the trigger) has had its chance.
const JobDelay = JobLease + time.Minute

// RunDueJobs runs the jobs older than JobDelay, at most limit of them:
// the sweep's backstop for the jobs neither their turn nor the trigger
// finished. A job another runner holds is left to it.
func (svc *Service) RunDueJobs(ctx context.Context, limit int) (JobsReport, error) {
	jobs, err := svc.Jobs.DueJobs(ctx, svc.now().Add(-JobDelay), limit)
	r := JobsReport{Found: len(jobs)}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		switch err := svc.RunJob(ctx, j.SessionID, j.ID); {
		case err == nil:
			r.Ran++
		case errs.CodeOf(err) == errs.ECONFLICT:
			r.Held++
		default:
			r.Failed++
			svc.logError(ctx, "a job after a reply failed; the next sweep tries again", j.SessionID, err)
		}
	}
	return r, err
}

// RunJob runs the job id of session sessionID (as the store's trigger on
// its creation does), unless it is done (nil) or another runner holds it
// (ECONFLICT: try again later). A job whose session or reply is gone
// (purged, erased) is dropped.
func (svc *Service) RunJob(ctx context.Context, sessionID, id string) error {
	now := svc.now()
	j, err := svc.Jobs.ClaimJob(ctx, sessionID, id, ids.New(), now, now.Add(JobLease))
	if errs.CodeOf(err) == errs.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	res, err := svc.jobResult(ctx, j)
	if err == nil {
		svc.afterTurn(ctx, res)
	} else if errs.CodeOf(err) != errs.ENOTFOUND {
		return err // the lease runs out, and the sweep tries again
	}
	return svc.Jobs.FinishJob(context.WithoutCancel(ctx), sessionID, id)
}

// jobResult is the turn a job follows, as stored now, in one read: the
// session, its tail, the message answered and the reply. ENOTFOUND if
// any is gone.
func (svc *Service) jobResult(ctx context.Context, j *Job) (*TurnResult, error) {
	st, err := svc.Turns.ReadTurn(ctx, TurnQuery{UserID: j.UserID, SessionID: j.SessionID, AskedID: j.UserMessageID, ReplyID: j.ID})
	if err != nil {
		return nil, err
	}
	if st.Session == nil || st.Session.UserID != j.UserID || st.Asked == nil || st.Answer == nil {
		return nil, errs.Errorf(errs.ENOTFOUND, "the turn of job %s is gone", j.ID)
	}
	res := &TurnResult{Session: st.Session, Tail: st.Tail, User: *st.Asked, Reply: *st.Answer, memoryTokens: j.MemoryTokens}
	if b := j.Learn; b != nil {
		res.learn = &longterm.Batch{From: b.From, To: b.To}
	}
	return res, nil
}
