package inprocdb

import (
	"context"
	"slices"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

// ClaimJob gives the job to runner unless another holds it; see
// chat.JobStore.
func (db *DB) ClaimJob(_ context.Context, sessionID, id, runner string, now, lease time.Time) (*chat.Job, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	j, ok := db.jobs[sessionID][id]
	if !ok {
		return nil, errs.Errorf(errs.ENOTFOUND, "job %s is done", id)
	}
	if j.Runner != runner && j.Lease.After(now) {
		return nil, errs.Errorf(errs.ECONFLICT, "job %s is held until %s", id, j.Lease.Format(time.RFC3339))
	}
	j.Runner, j.Lease = runner, lease
	db.putJobLocked(j)
	return cloneJob(j), nil
}

// FinishJob deletes the job.
func (db *DB) FinishJob(_ context.Context, sessionID, id string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.jobs[sessionID], id)
	if len(db.jobs[sessionID]) == 0 {
		delete(db.jobs, sessionID)
	}
	return nil
}

// DueJobs lists the jobs created before before, oldest first.
func (db *DB) DueJobs(_ context.Context, before time.Time, limit int) ([]chat.Job, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []chat.Job
	for _, js := range db.jobs {
		for _, j := range js {
			if j.CreatedAt.Before(before) {
				out = append(out, *cloneJob(j))
			}
		}
	}
	slices.SortFunc(out, func(a, b chat.Job) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out[:min(limit, len(out))], nil
}

// putJobLocked stores j (a reply's commit creates it).
func (db *DB) putJobLocked(j chat.Job) {
	if db.jobs[j.SessionID] == nil {
		db.jobs[j.SessionID] = map[string]chat.Job{}
	}
	db.jobs[j.SessionID][j.ID] = *cloneJob(j)
}

func cloneJob(j chat.Job) *chat.Job {
	if j.Learn != nil {
		b := *j.Learn
		j.Learn = &b
	}
	return &j
}
