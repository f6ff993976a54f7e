package firestoredb

import (
	"context"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/parallel"
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
// per session, and the slowest). A subcollection added to sessions must be
// added here, or purges leave it behind.
var sessionCollections = []string{MessagesCollection, ContextCollection, CompactionsCollection, RecallCollection, JobsCollection}

// Defaults of the purge machinery.
const (
	// DefaultPurgeLease is how long a purge is left to the sweep running it.
	DefaultPurgeLease = 2 * time.Minute
	// purgeWorkers is how many marking transactions, queries, reads and
	// forgettings of purges run at once.
	purgeWorkers = 32
	// purgeGroup is how many sessions one marking transaction marks: a
	// transaction a session made its three round trips the purges' main
	// cost (most of their time on the emulator).
	purgeGroup = 50
)

// PurgeLease sets how long a sweep's claim on a purge lasts; a purge whose
// sweep died is resumed by another after it.
func PurgeLease(d time.Duration) Option { return func(db *DB) { db.purgeLease = d } }

// Clock sets the clock of purge leases (the policy's clock is the caller's).
func Clock(now func() time.Time) Option { return func(db *DB) { db.now = now } }

// errPurgeBusy is the answer for a purge another sweep holds.
var errPurgeBusy = &errs.Error{Code: errs.EPRECONDITION, Message: "another sweep is purging this session"}

// PurgeSession purges one session (see PurgeSessions).
func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	p := db.PurgeSessions(ctx, []string{id}, check, forget)[0]
	return p.Documents, p.Err
}

// PurgeSessions purges many sessions at once, in three steps over all of
// them: they are marked and their documents deleted in transactions of
// up to purgeGroup sessions each, which run check on each first and mark
// only those it accepts (purgeWorkers transactions at a time); then
// everything under the marked ones is deleted in commits of many
// sessions' documents (see deleteUnderPurged); then forget runs once for each
// user and the markers go.
func (db *DB) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	marked := make([]purgeTarget, len(ids))
	for i, id := range ids {
		out[i].SessionID = id
	}
	inParallel((len(ids)+purgeGroup-1)/purgeGroup, func(g int) {
		lo, hi := g*purgeGroup, min((g+1)*purgeGroup, len(ids))
		db.markPurges(ctx, ids[lo:hi], check, marked[lo:hi], out[lo:hi])
	})
	db.finishPurges(ctx, out, marked, forget)
	return out
}

// ResumePurge finishes one purge that was cut off (see ResumePurges); a
// purge already finished is 0 documents and no error.
func (db *DB) ResumePurge(ctx context.Context, id string, forget sessions.Forget) (int, error) {
	p := db.ResumePurges(ctx, []string{id}, forget)[0]
	if errs.CodeOf(p.Err) == errs.ENOTFOUND {
		return 0, nil
	}
	return p.Documents, p.Err
}

// ResumePurges finishes purges that were cut off, each unless another
// sweep holds its lease (then its error is a precondition error).
func (db *DB) ResumePurges(ctx context.Context, ids []string, forget sessions.Forget) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	claimed := make([]purgeTarget, len(ids))
	inParallel(len(ids), func(i int) {
		out[i].SessionID = ids[i]
		var owner string
		owner, out[i].Err = db.claimPurge(ctx, ids[i])
		// What the session held is not known any more: look for everything.
		claimed[i] = purgeTarget{s: &sessions.Session{ID: ids[i], UserID: owner, NextSeq: -1}}
	})
	db.finishPurges(ctx, out, claimed, forget)
	return out
}

// purgeTarget is a session being purged: as it was last stored, with the
// window of its context (nil if it had none), or, with NextSeq -1, only
// its id and owner.
type purgeTarget struct {
	s       *sessions.Session
	tailDoc *tailDoc
	// With a tail document: whether its draft and its recall marker exist (read
	// with it, in the marking transaction), and whether units of search may
	// be where they were kept before (see userUnitsField).
	draft, embedded, legacyUnits bool
}

// finishPurges deletes everything under each marked session (those in out
// without an error) and, at once, calls forget once for each of their
// users (it reads and changes only the user's memory, nothing under the
// sessions), then deletes the markers of those whose deletes and
// forgetting both succeeded, adding to each outcome. A purge whose
// forgetting or deletes failed stays marked, and the run that resumes it
// does both again.
func (db *DB) finishPurges(ctx context.Context, out []retention.Purged, gone []purgeTarget, forget sessions.Forget) {
	forgot := make([]error, len(out))
	byUser := forgettings(out, gone)
	done := make(chan struct{})
	go func() {
		defer close(done)
		forgetByUser(ctx, byUser, forget, forgot)
	}()
	db.deleteUnderPurged(ctx, out, gone)
	<-done
	for i, err := range forgot {
		if out[i].Err == nil {
			out[i].Err = err
		}
	}
	var markers deletes
	for i := range out {
		if out[i].Err == nil {
			markers.add(i, db.markerRef(out[i].SessionID))
		}
	}
	unlisted := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		db.unlistPurged(ctx, out, gone, func(user string, err error) {
			mu.Lock()
			unlisted[user] = err
			mu.Unlock()
		})
	}()
	errsOf := db.commitDeletes(ctx, markers)
	wg.Wait()
	for k, i := range markers.of {
		if errsOf[k] != nil {
			out[i].Err = errsOf[k]
		}
	}
	for i := range out {
		if out[i].Err == nil {
			out[i].Err = unlisted[gone[i].s.UserID]
		}
		out[i].Err = translate(out[i].Err)
	}
}

// forgetting is one user's purges in a page: their indexes into its
// outcomes, and their sessions.
type forgetting struct {
	user string
	at   []int
	ids  []string
}

// forgettings groups the purges in out still without an error by user.
func forgettings(out []retention.Purged, gone []purgeTarget) []*forgetting {
	var all []*forgetting
	of := map[string]*forgetting{}
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		u := gone[i].s.UserID
		f := of[u]
		if f == nil {
			f = &forgetting{user: u}
			of[u] = f
			all = append(all, f)
		}
		f.at, f.ids = append(f.at, i), append(f.ids, out[i].SessionID)
	}
	return all
}

// forgetByUser calls forget (if set) once for each user in byUser, with
// their purges' sessions, purgeWorkers users at once: what a user's
// memory learned from a page of purges is forgotten in one change of it,
// not one a session (each a read, a query and a transaction, all on the
// same document). Its error is each of those purges' in failed.
func forgetByUser(ctx context.Context, byUser []*forgetting, forget sessions.Forget, failed []error) {
	if forget == nil {
		return
	}
	inParallel(len(byUser), func(j int) {
		err := forget(ctx, byUser[j].user, byUser[j].ids)
		for _, i := range byUser[j].at {
			failed[i] = err
		}
	})
}

// unlistPurged removes, for each user, the sessions whose purges in out
// have deleted everything under them from their list: listed as deleted
// until then, so that no recall or search showed what was left. One
// write a user, purgeWorkers users at once; done gets each user's
// outcome (an erased account's list is gone: not an error). One that
// fails leaves an id listed that names nothing.
func (db *DB) unlistPurged(ctx context.Context, out []retention.Purged, gone []purgeTarget, done func(user string, err error)) {
	ids := map[string][]any{}
	var users []string
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		u := gone[i].s.UserID
		if ids[u] == nil {
			users = append(users, u)
		}
		ids[u] = append(ids[u], out[i].SessionID)
	}
	inParallel(len(users), func(j int) {
		err := db.commitWith(ctx, func(b *firestore.WriteBatch) {
			b.Update(db.deletedRef(users[j]), []firestore.Update{{Path: "ids", Value: firestore.ArrayRemove(ids[users[j]]...)}})
		})
		if isNotFound(err) {
			err = nil
		}
		done(users[j], err)
	})
}

// markPurges checks the sessions ids, and marks those that check
// accepts with a lease and deletes their documents, atomically, in one
// transaction (sessions do not contend: a change of one, such as a
// restore, makes it retry, and check then refuses that one). It sets
// each one's outcome in out (a check's error is that session's) and, for
// those marked, the session as it was with the tail document of its context,
// read in the same round trip, in gone; out's Documents counts the
// session document.
func (db *DB) markPurges(ctx context.Context, ids []string, check func(*sessions.Session) error, gone []purgeTarget, out []retention.Purged) {
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		refs := make([]*firestore.DocumentRef, 0, 4*len(ids))
		for _, id := range ids {
			c := db.contextOf(id)
			refs = append(refs, db.sessionRef(id), db.tailRef(id), c.Doc(DraftDocID), c.Doc(recallMarkerDocID))
		}
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		now := db.leaseClock()
		var lists listChanges
		for i, id := range ids {
			gone[i], out[i].Err = readTarget(snaps[4*i:4*i+4], id, check)
			if out[i].Err != nil {
				continue
			}
			s := gone[i].s
			if err := tx.Set(db.markerRef(id), purgeMarker{UserID: s.UserID, CreatedAt: now, LeaseUntil: now.Add(db.lease())}); err != nil {
				return err
			}
			lists.add(db.listChangeOf(s, s, true))
			if err := tx.Delete(refs[4*i]); err != nil {
				return err
			}
		}
		return lists.apply(tx)
	})
	for i := range out {
		switch {
		case err != nil && out[i].Err == nil:
			out[i].Err, gone[i] = err, purgeTarget{}
		case out[i].Err == nil:
			out[i].Documents = 1 // the session document
		}
	}
}

// readTarget is the session to purge that snaps hold (the session, its
// tail document, its draft and its recall marker), if check accepts it.
func readTarget(snaps []*firestore.DocumentSnapshot, id string, check func(*sessions.Session) error) (purgeTarget, error) {
	if !snaps[0].Exists() {
		return purgeTarget{}, sessions.NotFound(id)
	}
	s, err := decodeSession(snaps[0])
	if err != nil {
		return purgeTarget{}, err
	}
	if err := check(s); err != nil {
		return purgeTarget{}, err
	}
	t := purgeTarget{s: s, draft: snaps[2].Exists(), embedded: snaps[3].Exists()}
	if t.embedded {
		only, _ := snaps[3].DataAt(userUnitsField)
		t.legacyUnits = only != true
	}
	if snaps[1].Exists() {
		t.tailDoc = &tailDoc{}
		if err := snaps[1].DataTo(t.tailDoc); err != nil {
			return purgeTarget{}, err
		}
	}
	return t, nil
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

// inParallel runs fn(0..n-1), purgeWorkers at a time.
func inParallel(n int, fn func(i int)) { parallel.Each(n, purgeWorkers, fn) }
