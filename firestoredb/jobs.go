package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

// JobsCollection is the outbox of a session: chat_sessions/{id}/jobs/{replyId},
// one document per reply whose after-turn work is not done yet (see
// chat.Job). The reply's commit creates it; the deployed trigger on its
// creation, the turn itself or the sweep runs it and deletes it.
const JobsCollection = "jobs"

// jobDoc is a job as stored: ids and counts only, nothing a user wrote.
type jobDoc struct {
	UserID        string    `firestore:"userId"`
	UserMessageID string    `firestore:"userMessageId"`
	MemoryTokens  int       `firestore:"memoryTokens,omitempty"`
	LearnFrom     int       `firestore:"learnFrom,omitempty"`
	LearnTo       int       `firestore:"learnTo,omitempty"`
	Learn         bool      `firestore:"learn,omitempty"`
	CreatedAt     time.Time `firestore:"createdAt"`
	Runner        string    `firestore:"runner"`
	Lease         time.Time `firestore:"lease"`
}

// ClaimJob reads the job and, unless another runner holds it, takes it
// in an update conditioned on that read (two round trips); see
// chat.JobStore.
func (db *DB) ClaimJob(ctx context.Context, sessionID, id, runner string, now, lease time.Time) (*chat.Job, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	ref := db.jobRef(sessionID, id)
	snap, err := ref.Get(ctx)
	if isNotFound(err) {
		return nil, errs.Errorf(errs.ENOTFOUND, "job %s is done", id)
	}
	if err != nil {
		return nil, translate(err)
	}
	var d jobDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, errs.Wrap(errs.EINTERNAL, err, "decoding a job")
	}
	if d.Runner != runner && d.Lease.After(now) {
		return nil, errs.Errorf(errs.ECONFLICT, "job %s is held until %s", id, d.Lease.Format(time.RFC3339))
	}
	d.Runner, d.Lease = runner, lease.UTC()
	_, err = ref.Update(ctx, []firestore.Update{{Path: "runner", Value: d.Runner}, {Path: "lease", Value: d.Lease}},
		firestore.LastUpdateTime(snap.UpdateTime))
	switch status.Code(err) {
	case codes.OK:
		return d.job(sessionID, id), nil
	case codes.FailedPrecondition:
		return nil, errs.Errorf(errs.ECONFLICT, "job %s was claimed meanwhile", id)
	case codes.NotFound:
		return nil, errs.Errorf(errs.ENOTFOUND, "job %s is done", id)
	}
	return nil, translate(err)
}

// FinishJob deletes the job (one round trip).
func (db *DB) FinishJob(ctx context.Context, sessionID, id string) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.jobRef(sessionID, id).Delete(ctx)
	return translate(err)
}

// DueJobs queries the jobs of every session by creation (a
// collection-group query on createdAt; see firestore.indexes.json).
func (db *DB) DueJobs(ctx context.Context, before time.Time, limit int) ([]chat.Job, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.client.CollectionGroup(JobsCollection).Where("createdAt", "<", before.UTC()).
		OrderBy("createdAt", firestore.Asc).Limit(limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]chat.Job, 0, len(snaps))
	for _, s := range snaps {
		var d jobDoc
		if err := s.DataTo(&d); err != nil {
			return nil, errs.Wrap(errs.EINTERNAL, err, "decoding a job")
		}
		out = append(out, *d.job(s.Ref.Parent.Parent.ID, s.Ref.ID))
	}
	return out, nil
}

// jobRef is chat_sessions/{sessionID}/jobs/{id}.
func (db *DB) jobRef(sessionID, id string) *firestore.DocumentRef {
	return db.sessionRef(sessionID).Collection(JobsCollection).Doc(id)
}

func toJobDoc(j *chat.Job) jobDoc {
	d := jobDoc{UserID: j.UserID, UserMessageID: j.UserMessageID, MemoryTokens: j.MemoryTokens,
		CreatedAt: j.CreatedAt.UTC(), Runner: j.Runner, Lease: j.Lease.UTC()}
	if b := j.Learn; b != nil {
		d.Learn, d.LearnFrom, d.LearnTo = true, b.From, b.To
	}
	return d
}

func (d jobDoc) job(sessionID, id string) *chat.Job {
	j := &chat.Job{SessionID: sessionID, ID: id, UserID: d.UserID, UserMessageID: d.UserMessageID, MemoryTokens: d.MemoryTokens,
		CreatedAt: d.CreatedAt, Runner: d.Runner, Lease: d.Lease}
	if d.Learn {
		j.Learn = &chat.LearnBatch{From: d.LearnFrom, To: d.LearnTo}
	}
	return j
}
