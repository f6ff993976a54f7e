package firestoredb

import (
	"context"
	"errors"
	"slices"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/retention"
)

// Everything under the sessions a page of purges marked is deleted in
// plain commits of up to deleteBatch deletes, many sessions' documents in
// each, deleteWorkers commits at once: a commit is one round trip however
// many documents it deletes (up to Firestore's 500 writes), where the
// client's BulkWriter sends 20 a request and holds itself to 10,000 writes
// a second (on the emulator, commits of 100 delete several times faster).
// Deletes in a commit carry no precondition (one that failed would fail
// the commit), and a delete of a document that does not exist succeeds.
// So a commit deletes documents known to exist (documents the marking
// transaction read, messages the tail document names), counted; small
// documents that may exist (after-turn jobs named by the replies, every
// context document of a purge resumed), read first in one batched read
// across the page's sessions, and counted if found; and every unit of
// search the messages may name, in the user's collection and under the
// session (where units were kept before), without knowing which exist:
// each holds an embedding (kilobytes: reading them would cost more than
// deleting them), and deleting them on condition, through BulkWriters,
// took most of a purge's time. Those are not counted. Once its session is
// marked nothing writes under it any more (an exchange's unit is saved in
// a transaction that reads its session), so what was named or read is what
// is deleted.

// Defaults of the purge's deletes.
const (
	// deleteBatch is how many deletes one commit makes.
	deleteBatch = 100
	// deleteWorkers is how many of those commits run at once.
	deleteWorkers = 16
	// existsBatch is how many documents one read asks about.
	existsBatch = 500
)

// underPlan is what a purge deletes under one session: documents known to
// exist, documents that may (read first), units of search that may
// (deleted by name, uncounted), and subcollections to list.
type underPlan struct {
	known, maybe []*firestore.DocumentRef
	units        []*firestore.DocumentRef // units of search that may exist
	list         []firestore.Query
}

// deletes are documents to delete, each on behalf of one purge (of, an
// index into the page's outcomes).
type deletes struct {
	refs []*firestore.DocumentRef
	of   []int
}

func (d *deletes) add(i int, refs ...*firestore.DocumentRef) {
	for _, r := range refs {
		d.refs, d.of = append(d.refs, r), append(d.of, i)
	}
}

// deleteUnderPurged deletes every document under each marked session (those in
// out without an error), adding what it deleted and any error to each
// outcome.
func (db *DB) deleteUnderPurged(ctx context.Context, out []retention.Purged, gone []purgeTarget) {
	plans := make([]underPlan, len(out))
	var named, maybe deletes
	for i := range out {
		if out[i].Err == nil {
			plans[i] = db.planUnder(gone[i])
			named.add(i, plans[i].known...)
			maybe.add(i, plans[i].maybe...)
		}
	}
	counted := len(named.refs) // the units after them are not counted
	for i := range out {
		named.add(i, plans[i].units...)
	}
	// What is named goes at once with the read of what may exist, which
	// then goes in commits of its own.
	var namedFailed []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		namedFailed = db.commitDeletes(ctx, named)
	}()
	found, failed := db.existing(ctx, maybe)
	var more deletes
	for k, i := range maybe.of {
		if failed[k] != nil {
			out[i].Err = errors.Join(out[i].Err, failed[k])
		} else if found[k] {
			more.add(i, maybe.refs[k])
		}
	}
	db.tally(out, more, db.commitDeletes(ctx, more), len(more.refs))
	<-done
	db.tally(out, named, namedFailed, counted)
	inParallel(len(out), func(i int) {
		for _, col := range plans[i].list {
			if out[i].Err != nil {
				return
			}
			out[i].Err = db.deleteListed(ctx, col, &out[i].Documents)
		}
	})
}

// tally adds to each purge's outcome its deletes in d: a document each
// among the first counted, or the error of the commit that held it (once).
func (db *DB) tally(out []retention.Purged, d deletes, failed []error, counted int) {
	for k, i := range d.of {
		switch {
		case failed[k] == nil:
			if k < counted {
				out[i].Documents++
			}
		case k == 0 || d.of[k-1] != i || failed[k-1] != failed[k]:
			out[i].Err = errors.Join(out[i].Err, failed[k])
		}
	}
}

// planUnder is what is under session t as far as what the marking read
// tells. The context documents have fixed ids; there are messages only if
// NextSeq > 0 (both are written in the same commit as NextSeq), and when
// the tail document holds them all (a session never branched no longer than its
// tail document, as most are) their ids are read from it, with their units of
// search and after-turn jobs (named by a message: a unit by its reply, a
// lone question or a tool result, so by any of them; a job by its reply);
// there are compaction records only
// if a summary was ever saved. What it cannot name is listed. A resumed
// purge (NextSeq -1) knows nothing and lists everything.
func (db *DB) planUnder(t purgeTarget) underPlan {
	var p underPlan
	s := t.s
	known := s.NextSeq >= 0
	var ids []string  // every message's, when the context holds them all
	exchanges := true // unless the context says there are none
	if known && s.NextSeq > 0 {
		c := db.contextContents(t)
		p.known, p.maybe = c.known, c.maybe
		for _, id := range c.messages {
			p.known = append(p.known, db.messagesOf(s.ID).Doc(id))
			if c.embedded {
				p.units = append(p.units, db.unitsOf(s.UserID).Doc(id))
			}
			if c.legacyUnits { // where units were kept before (see legacyRecallOf)
				p.units = append(p.units, db.legacyRecallOf(s.ID).Doc(id))
			}
		}
		for _, id := range c.replies { // its after-turn jobs, if any is left
			p.maybe = append(p.maybe, db.jobRef(s.ID, id))
		}
		ids, exchanges = c.messages, c.embedded && c.messages == nil
	}
	for _, name := range sessionCollections {
		switch {
		case !known:
		case name == ContextCollection, name == MessagesCollection && (s.NextSeq == 0 || ids != nil),
			name == CompactionsCollection && s.Bookkeeping.SummaryUpdatedAt == nil, // set by every save of a record
			name == RecallCollection && (s.NextSeq == 0 || !exchanges),
			name == JobsCollection && (s.NextSeq == 0 || ids != nil): // named by the replies' ids
			continue
		}
		p.list = append(p.list, db.sessionRef(s.ID).Collection(name).Query)
		if name == RecallCollection { // where they are now, and where they were (see legacyRecallOf)
			p.list = append(p.list, db.sessionUnits(s.UserID, s.ID))
		}
	}
	return p
}

// existing reads the documents of d, existsBatch in one round trip,
// purgeWorkers reads at once, and reports which exist, or each one's
// read's error.
func (db *DB) existing(ctx context.Context, d deletes) ([]bool, []error) {
	found, failed := make([]bool, len(d.refs)), make([]error, len(d.refs))
	inParallel((len(d.refs)+existsBatch-1)/existsBatch, func(b int) {
		lo, hi := b*existsBatch, min((b+1)*existsBatch, len(d.refs))
		octx, cancel := db.op(ctx)
		defer cancel()
		snaps, err := db.client.GetAll(octx, d.refs[lo:hi])
		for k := lo; k < hi; k++ {
			if failed[k] = err; err == nil {
				found[k] = snaps[k-lo].Exists()
			}
		}
	})
	return found, failed
}

// deleteListed deletes every document of col, a page at a time (each
// page's deletes done before the next query, which would otherwise find
// them again), counting them into done.
func (db *DB) deleteListed(ctx context.Context, col firestore.Query, done *int) error {
	q := col.Select().Limit(purgePage)
	for {
		snaps, err := db.getAll(ctx, q)
		if err != nil {
			return err
		}
		var page deletes
		for _, snap := range snaps {
			page.add(0, snap.Ref)
		}
		for _, err := range db.commitDeletes(ctx, page) {
			if err != nil {
				return err
			}
			*done++
		}
		if len(snaps) < purgePage {
			return nil
		}
	}
}

// commitDeletes deletes d's documents in commits of deleteBatch,
// deleteWorkers at once, and returns each one's outcome: its commit's.
func (db *DB) commitDeletes(ctx context.Context, d deletes) []error {
	failed := make([]error, len(d.refs))
	parallel.Each((len(d.refs)+deleteBatch-1)/deleteBatch, deleteWorkers, func(b int) {
		lo, hi := b*deleteBatch, min((b+1)*deleteBatch, len(d.refs))
		err := db.commitWith(ctx, func(wb *firestore.WriteBatch) {
			for _, r := range d.refs[lo:hi] {
				wb.Delete(r)
			}
		})
		for k := lo; k < hi; k++ {
			failed[k] = err
		}
	})
	return failed
}

// commitWith commits the writes fill adds as one batch, under the
// operation timeout, again after a fault that may pass (its writes must
// be idempotent, as deletes are).
func (db *DB) commitWith(ctx context.Context, fill func(*firestore.WriteBatch)) error {
	for attempt := 0; ; attempt++ {
		octx, cancel := db.op(ctx)
		b := db.client.Batch()
		fill(b)
		_, err := b.Commit(octx)
		cancel()
		if err == nil || !transient(ctx, err) || attempt == faultTries {
			return err
		}
		if err := backoff(ctx, attempt+1); err != nil {
			return err
		}
	}
}

// sessionContents is what a purge found under a session without a query.
type sessionContents struct {
	known       []*firestore.DocumentRef // context documents that exist
	maybe       []*firestore.DocumentRef // context documents that may exist
	messages    []string                 // every message's id, or nil when not all are known
	replies     []string                 // with messages, the replies' ids: its after-turn jobs' (a reply has one)
	embedded    bool                     // exchanges were embedded under it (its recall marker)
	legacyUnits bool                     // and their units may be under it (see userUnitsField)
}

// contextContents returns what is under session t as far as its context
// tells: the context documents that exist, the id of every message when
// its tail document holds them all (the session never branched and its context
// starts at its first message) with the replies among them, and whether
// exchanges were embedded under it. Without a tail document (a context in an
// earlier layout) it returns every possible context document as one that
// may exist, no ids, and embedded true. The session document is gone, so
// nothing writes its context any more.
func (db *DB) contextContents(t purgeTarget) sessionContents {
	s, w := t.s, t.tailDoc
	c := db.contextOf(s.ID)
	if w == nil {
		var out sessionContents
		for _, id := range contextDocIDs() {
			out.maybe = append(out.maybe, c.Doc(id))
		}
		out.embedded = true
		return out
	}
	out := sessionContents{known: []*firestore.DocumentRef{c.Doc(tailDocID)}}
	if t.draft {
		out.known = append(out.known, c.Doc(DraftDocID))
	}
	if t.embedded {
		out.known = append(out.known, c.Doc(recallMarkerDocID))
	}
	out.embedded, out.legacyUnits = t.embedded, t.legacyUnits
	if s.Branches != nil || w.From != 0 {
		return out
	}
	ids := make([]string, 0, s.NextSeq)
	var replies []string
	for seq := range s.NextSeq {
		e, ok := w.Messages[seqKey(seq)]
		if !ok {
			return out
		}
		m, err := decodeEntry(e, s.ID)
		if err != nil || m.ID == "" {
			return out
		}
		ids = append(ids, m.ID)
		if m.Role == history.RoleAssistant {
			replies = append(replies, m.ID)
		}
	}
	out.messages, out.replies = ids, replies
	return out
}

// listChanges are changes of users' lists of sessions made together: one
// write a list, whatever the number of its sessions changed.
type listChanges []*listChange

// add merges c (nil: none) into the change of its list: the off-branch
// spans of several sessions (what a purge's change holds) become one
// write. A change that sets a field the list's change sets already (no
// purge's does) stays a write of its own, after it: a commit applies its
// writes in order.
func (l *listChanges) add(c *listChange) {
	if c == nil {
		return
	}
	for _, o := range *l {
		if o.ref.Path == c.ref.Path && o.merges(c) {
			return
		}
	}
	*l = append(*l, c)
}

// merges adds c's fields to o's, if none but userId and off (a map by
// session id) is in both, and reports whether it did.
func (o *listChange) merges(c *listChange) bool {
	for k := range c.data {
		if _, both := o.data[k]; both && k != "userId" && k != "off" {
			return false
		}
	}
	for k, v := range c.data {
		off, ok := v.(map[string]any)
		was, had := o.data[k].(map[string]any)
		if k == "off" && ok && had {
			for id, x := range off {
				was[id] = x
			}
			continue
		}
		o.data[k] = v
	}
	for _, p := range c.merge {
		if !slices.ContainsFunc(o.merge, func(q firestore.FieldPath) bool { return slices.Equal(q, p) }) {
			o.merge = append(o.merge, p)
		}
	}
	return true
}

// apply writes each change in tx.
func (l listChanges) apply(tx *firestore.Transaction) error {
	for _, c := range l {
		if err := tx.Set(c.ref, c.data, firestore.Merge(c.merge...)); err != nil {
			return err
		}
	}
	return nil
}
