package firestoredb

import (
	"context"
	"errors"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
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
var errPurgeBusy = &errs.Error{Code: errs.EPRECONDITION, Message: "another sweep is purging this session"}

// PurgeSession purges one session (see PurgeSessions).
func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	p := db.PurgeSessions(ctx, []string{id}, check, forget)[0]
	return p.Documents, p.Err
}

// PurgeSessions purges many sessions at once, in three steps over all of
// them: each is marked and its document deleted in a transaction of its
// own that first runs check (purgeWorkers at a time); then everything
// under the marked ones is queried by name and deleted through one shared
// BulkWriter, which batches deletes across sessions; then forget runs for
// each and the markers go.
func (db *DB) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	marked := make([]purgeTarget, len(ids))
	inParallel(len(ids), func(i int) {
		out[i].SessionID = ids[i]
		marked[i], out[i].Err = db.markPurge(ctx, ids[i], check)
		if out[i].Err == nil {
			out[i].Documents = 1 // the session document
		}
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
// tail document of its context (nil if it had none), or, with NextSeq -1, only
// its id and owner.
type purgeTarget struct {
	s       *sessions.Session
	tailDoc *tailDoc
	// With a tail document: whether its draft and its recall marker exist (read
	// with it, in the marking transaction).
	draft, embedded bool
}

// finishPurges deletes everything under each marked session (those in out
// without an error) through one BulkWriter, calls forget once for each
// user of those whose deletes all succeeded, and deletes their markers,
// adding to each outcome.
func (db *DB) finishPurges(ctx context.Context, out []retention.Purged, gone []purgeTarget, forget sessions.Forget) {
	bw := db.client.BulkWriter(ctx)
	defer bw.End()
	jobs := make([][]*firestore.BulkWriterJob, len(out))
	inParallel(len(out), func(i int) {
		if out[i].Err == nil {
			jobs[i], out[i].Err = db.deleteUnderSession(ctx, bw, gone[i], &out[i].Documents)
		}
	})
	bw.Flush() // what is left of the last batches
	inParallel(len(out), func(i int) {
		for _, job := range jobs[i] {
			_, err := job.Results()
			switch {
			case err == nil:
				out[i].Documents++
			case !isNotFound(err): // a context document that was not there
				out[i].Err = errors.Join(out[i].Err, err)
			}
		}
		jobs[i] = nil
	})
	forgetByUser(ctx, out, gone, forget)
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		job, err := bw.Delete(db.markerRef(out[i].SessionID))
		if err != nil {
			out[i].Err = err
			continue
		}
		jobs[i] = []*firestore.BulkWriterJob{job}
	}
	unlisted := db.unlistPurged(bw, out, gone)
	bw.Flush()
	for i := range out {
		if out[i].Err == nil && unlisted[gone[i].s.UserID] != nil {
			jobs[i] = append(jobs[i], unlisted[gone[i].s.UserID])
		}
		for _, job := range jobs[i] {
			if _, err := job.Results(); err != nil && !isNotFound(err) { // an erased account's list is gone
				out[i].Err = err
			}
		}
		out[i].Err = translate(out[i].Err)
	}
}

// forgetByUser calls forget (if set) once for each user of the purges in
// out still without an error, with those purges' sessions, purgeWorkers
// users at once: what a user's memory learned from a page of purges is
// forgotten in one change of it, not one a session (each a read, a query
// and a transaction, all on the same document). Its error is each of
// those purges'.
func forgetByUser(ctx context.Context, out []retention.Purged, gone []purgeTarget, forget sessions.Forget) {
	if forget == nil {
		return
	}
	at := map[string][]int{} // user → indexes into out
	var users []string
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		u := gone[i].s.UserID
		if _, ok := at[u]; !ok {
			users = append(users, u)
		}
		at[u] = append(at[u], i)
	}
	inParallel(len(users), func(j int) {
		ids := make([]string, 0, len(at[users[j]]))
		for _, i := range at[users[j]] {
			ids = append(ids, out[i].SessionID)
		}
		err := forget(ctx, users[j], ids)
		for _, i := range at[users[j]] {
			out[i].Err = err
		}
	})
}

// inParallel runs fn(0..n-1), purgeWorkers at a time.
func inParallel(n int, fn func(i int)) { parallel.Each(n, purgeWorkers, fn) }

// unlistPurged queues, for each user, the removal from their list of the
// sessions whose purges in out have deleted everything under them: listed
// as deleted until then, so that no recall or search showed what was
// left. One write a user (a BulkWriter writes a document once); one not
// queued leaves an id listed that names nothing.
func (db *DB) unlistPurged(bw *firestore.BulkWriter, out []retention.Purged, gone []purgeTarget) map[string]*firestore.BulkWriterJob {
	ids := map[string][]any{}
	for i := range out {
		if out[i].Err == nil {
			ids[gone[i].s.UserID] = append(ids[gone[i].s.UserID], out[i].SessionID)
		}
	}
	jobs := map[string]*firestore.BulkWriterJob{}
	for user, of := range ids {
		job, err := bw.Update(db.deletedRef(user), []firestore.Update{{Path: "ids", Value: firestore.ArrayRemove(of...)}})
		if err == nil {
			jobs[user] = job
		}
	}
	return jobs
}

// deleteUnderSession queues the deletion of every document under session
// t in bw and returns the jobs not yet waited for. What the session
// document says saves queries, the slowest calls of a purge: the context
// documents have fixed ids; there are messages only if NextSeq > 0 (both
// are written in the same commit as NextSeq), and when the context holds
// them all (a session no longer than its tail document, as most are) their ids
// are read from it, and its after-turn jobs are named by its replies'
// ids; there are compaction records only if a summary was ever saved. Otherwise a query finds them: a full page (a long session)
// is waited for before the next query, which would otherwise see the same
// documents again; those count into done. Only documents that exist are
// deleted by id (and counted): the others fail with NotFound, which
// finishPurges ignores.
func (db *DB) deleteUnderSession(ctx context.Context, bw *firestore.BulkWriter, t purgeTarget, done *int) ([]*firestore.BulkWriterJob, error) {
	d := &deletion{bw: bw}
	s := t.s
	known := s.NextSeq >= 0
	var ids []string  // every message's, when the context holds them all
	exchanges := true // unless the context says there are none
	if known && s.NextSeq > 0 {
		var err error
		if ids, exchanges, err = db.deleteNamed(ctx, d, t); err != nil {
			return d.pending, err
		}
	}
	for _, name := range sessionCollections {
		switch {
		case !known:
		case name == ContextCollection, name == MessagesCollection && (s.NextSeq == 0 || ids != nil),
			name == CompactionsCollection && s.Bookkeeping.SummaryUpdatedAt == nil, // set by every save of a record
			name == RecallCollection && (s.NextSeq == 0 || !exchanges),
			name == JobsCollection && (s.NextSeq == 0 || ids != nil): // named by the replies' ids (see deleteNamed)
			continue
		}
		if err := db.deleteAllIn(ctx, d, db.sessionRef(s.ID).Collection(name), done); err != nil {
			return d.pending, err
		}
	}
	return d.pending, nil
}

// deleteNamed deletes, by id, what session t's context names: its own
// documents and, when it holds every message, the messages and their units
// of search. A unit is named by its reply or its one message, so with
// every message known the units are among them (a query of a subcollection
// is the slowest call of a purge, and the emulator answers it by scanning
// every session's). It returns the messages' ids when it knew them all,
// and whether there may be units it did not name.
func (db *DB) deleteNamed(ctx context.Context, d *deletion, t purgeTarget) (ids []string, exchanges bool, err error) {
	c, err := db.contextContents(ctx, t)
	if err != nil {
		return nil, true, err
	}
	refs := slices.Clone(c.existing)
	for _, id := range c.messages {
		refs = append(refs, db.messagesOf(t.s.ID).Doc(id))
	}
	if c.embedded {
		for _, id := range c.messages {
			refs = append(refs, db.recallOf(t.s.ID).Doc(id))
		}
	}
	for _, id := range c.replies { // its after-turn jobs, if any is left
		refs = append(refs, db.jobRef(t.s.ID, id))
	}
	for _, ref := range refs {
		if err := d.delete(ref); err != nil {
			return nil, true, err
		}
	}
	return c.messages, c.embedded && c.messages == nil, nil
}

// deleteAllIn deletes every document of col, a page at a time: each full
// page is waited for (and counted into done) before the next query, which
// would otherwise find the same documents again.
func (db *DB) deleteAllIn(ctx context.Context, d *deletion, col *firestore.CollectionRef, done *int) error {
	q := col.Select().Limit(purgePage)
	for {
		snaps, err := db.getAll(ctx, q)
		if err != nil {
			return err
		}
		var page []*firestore.BulkWriterJob
		for _, snap := range snaps {
			job, err := d.bw.Delete(snap.Ref)
			if err != nil {
				d.pending = append(d.pending, page...)
				return err
			}
			page = append(page, job)
		}
		if len(snaps) < purgePage {
			d.pending = append(d.pending, page...)
			return nil
		}
		for _, job := range page {
			if _, err := job.Results(); err != nil {
				return err
			}
			*done++
		}
	}
}

// deletion is the deletes of one purge queued in its BulkWriter, and the
// jobs not yet waited for.
type deletion struct {
	bw      *firestore.BulkWriter
	pending []*firestore.BulkWriterJob
}

// delete queues the deletion of ref, if it exists.
func (d *deletion) delete(ref *firestore.DocumentRef) error {
	job, err := d.bw.Delete(ref, firestore.Exists)
	if err == nil {
		d.pending = append(d.pending, job)
	}
	return err
}

// markPurge checks the session, deletes its document and leaves a marker
// with a lease, atomically; it returns the session as it was, with the
// tail document of its context, read in the same round trip.
func (db *DB) markPurge(ctx context.Context, id string, check func(*sessions.Session) error) (purgeTarget, error) {
	ref := db.sessionRef(id)
	var gone purgeTarget
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		c := db.contextOf(id)
		snaps, err := tx.GetAll([]*firestore.DocumentRef{ref, db.tailRef(id), c.Doc(DraftDocID), c.Doc(recallMarkerDocID)})
		if err != nil {
			return err
		}
		if !snaps[0].Exists() {
			return sessions.NotFound(id)
		}
		s, err := decodeSession(snaps[0])
		if err != nil {
			return err
		}
		if err := check(s); err != nil {
			return err
		}
		gone = purgeTarget{s: s, draft: snaps[2].Exists(), embedded: snaps[3].Exists()}
		if snaps[1].Exists() {
			gone.tailDoc = &tailDoc{}
			if err := snaps[1].DataTo(gone.tailDoc); err != nil {
				return err
			}
		}
		now := db.leaseClock()
		if err := tx.Set(db.markerRef(id), purgeMarker{UserID: s.UserID, CreatedAt: now, LeaseUntil: now.Add(db.lease())}); err != nil {
			return err
		}
		if err := db.listInTx(tx, s, s, true); err != nil {
			return err
		}
		return tx.Delete(ref)
	})
	return gone, err
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

// sessionContents is what a purge found under a session without a query.
type sessionContents struct {
	existing []*firestore.DocumentRef // context documents, to delete if they exist
	messages []string                 // every message's id, or nil when not all are known
	replies  []string                 // with messages, the replies' ids: its after-turn jobs' (a reply has one)
	embedded bool                     // exchanges were embedded under it (its recall marker)
}

// contextContents returns what is under session t as far as its context
// tells: the context documents that exist, the id of every message when
// its tail document holds them all (the session never branched and its context
// starts at its first message) with the replies among them, and whether
// exchanges were embedded under it. Without a tail document (a context in an
// earlier layout, or a resumed purge) it returns every possible context
// document, to be deleted if it exists, no ids, and embedded true. The
// session document is gone, so nothing writes its context any more.
func (db *DB) contextContents(ctx context.Context, t purgeTarget) (sessionContents, error) {
	s, w := t.s, t.tailDoc
	c := db.contextOf(s.ID)
	if w == nil {
		var out sessionContents
		for _, id := range contextDocIDs() {
			out.existing = append(out.existing, c.Doc(id))
		}
		out.embedded = true
		return out, nil
	}
	out := sessionContents{existing: []*firestore.DocumentRef{c.Doc(tailDocID)}}
	if t.draft {
		out.existing = append(out.existing, c.Doc(DraftDocID))
	}
	if t.embedded {
		out.existing = append(out.existing, c.Doc(recallMarkerDocID))
	}
	out.embedded = t.embedded
	if s.Branches != nil || w.From != 0 {
		return out, nil
	}
	ids := make([]string, 0, s.NextSeq)
	for seq := range s.NextSeq {
		e, ok := w.Messages[seqKey(seq)]
		if !ok {
			return out, nil
		}
		m, err := decodeEntry(e, s.ID)
		if err != nil || m.ID == "" {
			return out, nil
		}
		ids = append(ids, m.ID)
		if m.Role == history.RoleAssistant {
			out.replies = append(out.replies, m.ID)
		}
	}
	out.messages = ids
	return out, nil
}
