package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	firestorepb "cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// ExpiredSessions needs the composite index (status, expiresAt) declared in
// firestore.indexes.json: the sweep never scans the collection.
func (db *DB) ExpiredSessions(ctx context.Context, st sessions.Status, now time.Time, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	q := db.client.Collection(SessionsCollection).
		Where("status", "==", string(st)).
		Where("expiresAt", "<=", now).
		OrderBy("expiresAt", firestore.Asc).
		OrderBy(firestore.DocumentID, firestore.Asc).
		Limit(limit)
	if after != nil {
		q = q.StartAfter(after.ExpiresAt, after.ID)
	}
	return readSessions(ctx, q)
}

// CountExpired counts with an aggregation query on the same index as
// ExpiredSessions: one read per thousand sessions counted, no scan.
func (db *DB) CountExpired(ctx context.Context, st sessions.Status, now time.Time) (int, error) {
	return db.count(ctx, db.client.Collection(SessionsCollection).Where("status", "==", string(st)).Where("expiresAt", "<=", now))
}

// PendingPurges lists the sessions whose purge was cut off, by id.
func (db *DB) PendingPurges(ctx context.Context, after string, limit int) ([]string, error) {
	q := db.client.Collection(PurgesCollection).Select().OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	refs, err := db.getAll(ctx, q)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.Ref.ID
	}
	return ids, nil
}

// CountPendingPurges counts the purge markers.
func (db *DB) CountPendingPurges(ctx context.Context) (int, error) {
	return db.count(ctx, db.client.Collection(PurgesCollection).Query)
}

// count runs a count aggregation of q.
func (db *DB) count(ctx context.Context, q firestore.Query) (int, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, translate(err)
	}
	switch v := res["n"].(type) {
	case *firestorepb.Value:
		return int(v.GetIntegerValue()), nil
	case int64:
		return int(v), nil
	}
	return 0, errs.Errorf(errs.EINTERNAL, "internal error")
}

// SweepsCollection holds the sweep's state between runs (its backlog).
const SweepsCollection = "chat_sweeps"

type sweepState struct {
	Backlog int       `firestore:"backlog"`
	At      time.Time `firestore:"at"`
}

func (db *DB) LastBacklog(ctx context.Context) (int, time.Time, bool, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.client.Collection(SweepsCollection).Doc("state").Get(ctx)
	if status.Code(err) == codes.NotFound {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, translate(err)
	}
	var st sweepState
	if err := snap.DataTo(&st); err != nil {
		return 0, time.Time{}, false, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	return st.Backlog, st.At.UTC(), true, nil
}

func (db *DB) SaveBacklog(ctx context.Context, n int, at time.Time) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.client.Collection(SweepsCollection).Doc("state").Set(ctx, sweepState{Backlog: n, At: at})
	return translate(err)
}

// DeleteUserDocuments deletes every document that still carries userID:
// sessions (with what is under them), then, across all sessions, any
// message, context document or compaction record left behind, purge
// markers, and usage (its tail document, days and turn slots). Collection-group
// queries on userId need the field overrides declared in
// firestore.indexes.json.
func (db *DB) DeleteUserDocuments(ctx context.Context, userID string) (int, error) {
	total := 0
	sessionsOf := db.client.Collection(SessionsCollection).Where("userId", "==", userID).Select().Limit(purgePage)
	for {
		snaps, err := db.getAll(ctx, sessionsOf)
		if err != nil {
			return total, err
		}
		for _, snap := range snaps {
			n, err := db.deleteUnder(ctx, snap.Ref)
			total += n
			if err != nil {
				return total, err
			}
		}
		n, err := db.deleteAll(ctx, snaps)
		total += n
		if err != nil || len(snaps) < purgePage {
			if err != nil {
				return total, err
			}
			break
		}
	}
	queries := []firestore.Query{
		db.client.CollectionGroup(MessagesCollection).Where("userId", "==", userID),
		db.client.CollectionGroup(CompactionsCollection).Where("userId", "==", userID),
		db.client.CollectionGroup(ContextCollection).Where("userId", "==", userID),
		db.client.CollectionGroup(FactsCollection).Where("userId", "==", userID),
		db.client.CollectionGroup(RecallCollection).Where("userId", "==", userID),
		db.client.Collection(UsersCollection).Where("userId", "==", userID),
		db.client.Collection(PurgesCollection).Where("userId", "==", userID),
		db.client.Collection(AccountsCollection).Where("userId", "==", userID),
	}
	for _, q := range queries {
		n, err := db.deleteQuery(ctx, q)
		total += n
		if err != nil {
			return total, err
		}
	}
	// Usage lives under one document per user, found by path: its days
	// and turn slots with it.
	n, err := db.DeleteUsage(ctx, userID)
	return total + n, err
}

// deleteQuery deletes every document q matches, a page at a time.
func (db *DB) deleteQuery(ctx context.Context, q firestore.Query) (int, error) {
	total := 0
	for {
		snaps, err := db.getAll(ctx, q.Select().Limit(purgePage))
		if err != nil {
			return total, err
		}
		n, err := db.deleteAll(ctx, snaps)
		total += n
		if err != nil || len(snaps) < purgePage {
			return total, err
		}
	}
}

// getAll runs a query under the operation timeout.
func (db *DB) getAll(ctx context.Context, q firestore.Query) ([]*firestore.DocumentSnapshot, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := q.Documents(ctx).GetAll()
	return snaps, translate(err)
}

// deleteAll deletes snaps' documents with a BulkWriter.
func (db *DB) deleteAll(ctx context.Context, snaps []*firestore.DocumentSnapshot) (int, error) {
	if len(snaps) == 0 {
		return 0, nil
	}
	ctx, cancel := db.op(ctx)
	defer cancel()
	bw := db.client.BulkWriter(ctx)
	defer bw.End()
	jobs := make([]*firestore.BulkWriterJob, 0, len(snaps))
	for _, snap := range snaps {
		job, err := bw.Delete(snap.Ref)
		if err != nil {
			return 0, translate(err)
		}
		jobs = append(jobs, job)
	}
	bw.Flush()
	n := 0
	for _, job := range jobs {
		if _, err := job.Results(); err != nil {
			return n, translate(err)
		}
		n++
	}
	return n, nil
}
