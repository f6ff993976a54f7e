package firestoredb

import (
	"context"
	"errors"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// A purge runs in two steps. First one transaction checks the session,
// deletes its document and writes a marker in chat_purges: from then on
// no append can land (appends read the session), nothing derived from it
// can be saved (long-term memory's saves read it too), and the session
// cannot be restored. Then everything under the session is deleted, what
// was derived from it is forgotten, and last the marker goes. A purge cut
// off between the steps is found by its marker and finished by the next
// sweep. The marker holds a lease: while it runs, another sweep leaves
// that purge alone, so no two sweeps delete (and count) the same documents.

type purgeMarker struct {
	UserID     string    `firestore:"userId"`
	CreatedAt  time.Time `firestore:"createdAt"`
	LeaseUntil time.Time `firestore:"leaseUntil"`
}

// sessionCollections are the subcollections of a session document: a
// purge deletes them by name, without listing them (one round trip less
// per session, and the slowest).
var sessionCollections = []string{MessagesCollection, ContextCollection, CompactionsCollection}

// Defaults of the purge machinery.
const (
	// DefaultPurgeLease is how long a purge is left to the sweep running it.
	DefaultPurgeLease = 2 * time.Minute
	// purgeWorkers is how many sessions are purged at once; their deletes
	// share one BulkWriter, which batches them and limits the write rate.
	purgeWorkers = 32
)

// PurgeLease sets how long a sweep's claim on a purge lasts; a purge whose
// sweep died is resumed by another after it.
func PurgeLease(d time.Duration) Option { return func(db *DB) { db.purgeLease = d } }

// Clock sets the clock of purge leases (the policy's clock is the caller's).
func Clock(now func() time.Time) Option { return func(db *DB) { db.now = now } }

// errPurgeBusy is the answer for a purge another sweep holds.
var errPurgeBusy = &sessions.Error{Code: sessions.EPRECONDITION, Message: "another sweep is purging this session"}

// PurgeSession purges one session (see PurgeSessions).
func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	p := db.PurgeSessions(ctx, []string{id}, check, forget)[0]
	return p.Documents, p.Err
}

// PurgeSessions purges many sessions at once: each is marked and deleted
// in a transaction of its own that first runs check, then everything under
// them goes through one shared BulkWriter, then forget runs for each.
func (db *DB) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	return db.eachPurge(ctx, ids, func(ctx context.Context, bw *firestore.BulkWriter, id string) (int, error) {
		userID, err := db.markPurge(ctx, id, check)
		if err != nil {
			return 0, err
		}
		n, err := db.finishPurge(ctx, bw, id, userID, forget)
		return n + 1, err
	})
}

// ResumePurges finishes purges that were cut off, each unless another
// sweep holds its lease (then its error is a precondition error).
func (db *DB) ResumePurges(ctx context.Context, ids []string, forget sessions.Forget) []retention.Purged {
	return db.eachPurge(ctx, ids, func(ctx context.Context, bw *firestore.BulkWriter, id string) (int, error) {
		userID, err := db.claimPurge(ctx, id)
		if err != nil {
			return 0, err
		}
		return db.finishPurge(ctx, bw, id, userID, forget)
	})
}

// ResumePurge finishes one purge that was cut off (see ResumePurges); a
// purge already finished is 0 documents and no error.
func (db *DB) ResumePurge(ctx context.Context, id string, forget sessions.Forget) (int, error) {
	p := db.ResumePurges(ctx, []string{id}, forget)[0]
	if sessions.ErrorCode(p.Err) == sessions.ENOTFOUND {
		return 0, nil
	}
	return p.Documents, p.Err
}

// eachPurge runs purge for every id, purgeWorkers at a time, sharing one
// BulkWriter.
func (db *DB) eachPurge(ctx context.Context, ids []string, purge func(context.Context, *firestore.BulkWriter, string) (int, error)) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	bw := db.client.BulkWriter(ctx)
	defer bw.End()
	sem := make(chan struct{}, purgeWorkers)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			n, err := purge(ctx, bw, id)
			out[i] = retention.Purged{SessionID: id, Documents: n, Err: translate(err)}
		}()
	}
	wg.Wait()
	return out
}

func (db *DB) leaseClock() time.Time {
	if db.now != nil {
		return db.now().UTC()
	}
	return time.Now().UTC()
}

func (db *DB) lease() time.Duration {
	if db.purgeLease > 0 {
		return db.purgeLease
	}
	return DefaultPurgeLease
}

func (db *DB) markerRef(id string) *firestore.DocumentRef {
	return db.client.Collection(PurgesCollection).Doc(id)
}

// markPurge checks the session, deletes its document and leaves a marker
// with a lease, atomically; it returns the owner.
func (db *DB) markPurge(ctx context.Context, id string, check func(*sessions.Session) error) (string, error) {
	ref := db.sessionRef(id)
	var userID string
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		s, err := getSession(tx, ref)
		if err != nil {
			return err
		}
		if err := check(s); err != nil {
			return err
		}
		now := db.leaseClock()
		userID = s.UserID
		if err := tx.Set(db.markerRef(id), purgeMarker{UserID: s.UserID, CreatedAt: now, LeaseUntil: now.Add(db.lease())}); err != nil {
			return err
		}
		return tx.Delete(ref)
	})
	return userID, err
}

// claimPurge takes the lease of a cut-off purge; errPurgeBusy if another
// sweep holds it, ENOTFOUND if the purge is done.
func (db *DB) claimPurge(ctx context.Context, id string) (string, error) {
	var userID string
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{db.markerRef(id), db.sessionRef(id)})
		if err != nil {
			return err
		}
		if !snaps[0].Exists() {
			return sessions.NotFound(id)
		}
		if snaps[1].Exists() {
			// Never the case (the marker and the deletion are one
			// transaction), but a marker must not delete a live session.
			return tx.Delete(db.markerRef(id))
		}
		var m purgeMarker
		if err := snaps[0].DataTo(&m); err != nil {
			return err
		}
		now := db.leaseClock()
		if m.LeaseUntil.After(now) {
			return errPurgeBusy
		}
		userID, m.LeaseUntil = m.UserID, now.Add(db.lease())
		return tx.Set(db.markerRef(id), m)
	})
	if err == nil && userID == "" {
		return "", sessions.NotFound(id) // the marker of a live session was dropped
	}
	return userID, err
}

// finishPurge deletes everything under a marked session through bw, calls
// forget, and deletes the marker. It returns the documents deleted under
// the session.
func (db *DB) finishPurge(ctx context.Context, bw *firestore.BulkWriter, id, userID string, forget sessions.Forget) (int, error) {
	total := 0
	for _, name := range sessionCollections {
		q := db.sessionRef(id).Collection(name).Select().Limit(purgePage)
		for {
			snaps, err := db.getAll(ctx, q)
			if err != nil {
				return total, err
			}
			n, err := bulkDelete(bw, snaps)
			total += n
			if err != nil {
				return total, err
			}
			if len(snaps) < purgePage {
				break
			}
		}
	}
	if forget != nil {
		if err := forget(ctx, userID, id); err != nil {
			return total, err
		}
	}
	job, err := bw.Delete(db.markerRef(id))
	if err == nil {
		_, err = job.Results()
	}
	return total, err
}

// bulkDelete deletes snaps' documents through bw and waits for them.
func bulkDelete(bw *firestore.BulkWriter, snaps []*firestore.DocumentSnapshot) (int, error) {
	jobs := make([]*firestore.BulkWriterJob, 0, len(snaps))
	for _, snap := range snaps {
		job, err := bw.Delete(snap.Ref)
		if err != nil {
			return 0, err
		}
		jobs = append(jobs, job)
	}
	n := 0
	var errs []error
	for _, job := range jobs {
		if _, err := job.Results(); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
