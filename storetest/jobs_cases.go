package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// testJobs: a turn's commit creates its after-turn job with the rest;
// a runner claims it only when nobody else holds it, the sweep lists the
// old ones, and a finished job is gone; a purge takes a session's jobs.
func testJobs(t *testing.T, e *Env) {
	ctx := context.Background()
	turns, jobs := e.DB.(chat.TurnStore), e.DB.(chat.JobStore)
	q := chat.TurnQuery{UserID: "alice", SessionID: ids.New(), New: true, Day: "2026-01-15"}
	plan := appendPlan(e, q, "first")
	at := Epoch.Truncate(time.Millisecond)
	job := chat.Job{SessionID: q.SessionID, ID: "reply-1", UserID: "alice", UserMessageID: "m-1", MemoryTokens: 12,
		Learn: &chat.LearnBatch{From: 0, To: 3}, CreatedAt: at, Runner: "turn", Lease: at.Add(time.Minute)}
	Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(st *chat.TurnState) (*chat.TurnWrite, error) {
		w, err := plan(st)
		if w != nil {
			j := job
			w.Job = &j
		}
		return w, err
	}))
	if got := Must[[]chat.Job](t)(jobs.DueJobs(ctx, at, 10)); len(got) != 0 {
		t.Fatalf("a job created at %v is due before it: %+v", at, got)
	}
	due := Must[[]chat.Job](t)(jobs.DueJobs(ctx, at.Add(time.Second), 10))
	if len(due) != 1 || !due[0].CreatedAt.Equal(at) || !due[0].Lease.Equal(job.Lease) {
		t.Fatalf("due jobs: %+v", due)
	}
	due[0].CreatedAt, due[0].Lease = job.CreatedAt, job.Lease // compared above, zones aside
	if !reflect.DeepEqual(due[0], job) {
		t.Fatalf("the job as stored: %+v, want %+v", due[0], job)
	}
	_, err := jobs.ClaimJob(ctx, q.SessionID, job.ID, "trigger", at.Add(time.Second), at.Add(2*time.Minute))
	WantCode(t, err, errs.ECONFLICT) // the turn holds it
	got := Must[*chat.Job](t)(jobs.ClaimJob(ctx, q.SessionID, job.ID, "sweep", at.Add(time.Minute), at.Add(3*time.Minute)))
	if got.Runner != "sweep" || !got.Lease.Equal(at.Add(3*time.Minute)) || got.UserMessageID != "m-1" {
		t.Fatalf("claimed: %+v", got)
	}
	_, err = jobs.ClaimJob(ctx, q.SessionID, job.ID, "trigger", at.Add(2*time.Minute), at.Add(4*time.Minute))
	WantCode(t, err, errs.ECONFLICT) // the sweep holds it now
	if err := jobs.FinishJob(ctx, q.SessionID, job.ID); err != nil {
		t.Fatal(err)
	}
	_, err = jobs.ClaimJob(ctx, q.SessionID, job.ID, "trigger", at.Add(time.Hour), at.Add(2*time.Hour))
	WantCode(t, err, errs.ENOTFOUND) // done
	if err := jobs.FinishJob(ctx, q.SessionID, job.ID); err != nil {
		t.Fatalf("finishing a finished job: %v", err)
	}
	if got := Must[[]chat.Job](t)(jobs.DueJobs(ctx, at.Add(time.Hour), 10)); len(got) != 0 {
		t.Fatalf("a finished job is due: %+v", got)
	}
}
