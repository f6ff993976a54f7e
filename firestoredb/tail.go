package firestoredb

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// A session's tail (history.Tail) is kept in its "context" subcollection:
//
//	head        where the tail starts (its first seq), the number of the
//	            page being filled, the compaction lease
//	summary     the summary in use
//	p00 … p15   pages of the latest messages, a ring: page n lives in slot
//	            n mod pageSlots
//
// An append rewrites only the page being filled (at most PageBytes) and the
// small head; a page that falls wholly out of the tail is deleted. Every
// document's id is fixed, so one batched read fetches the whole context
// whatever the length of the session, and a write needs no query.
const (
	ContextCollection     = "context"
	CompactionsCollection = "compactions"
	headDocID             = "head"
	summaryDocID          = "summary"
	draftDocID            = "draft" // the partial text of the session's streaming reply
	legacyTailDocID       = "tail"  // the single context document of earlier versions
	// PageBytes is what one page holds before the next is started (a single
	// larger message gets a page of its own).
	PageBytes = 64 << 10
	// pageSlots is enough pages for history.MaxTailBytes: two consecutive
	// pages hold more than PageBytes together (else they would be one), so
	// a tail spans at most 2·MaxTailBytes/PageBytes + 2 pages, and the
	// slot a new page takes must be free of live ones.
	pageSlots = 2*history.MaxTailBytes/PageBytes + 4
)

func pageID(slot int) string { return fmt.Sprintf("p%02d", slot) }

func (db *DB) contextOf(sessionID string) *firestore.CollectionRef {
	return db.sessionRef(sessionID).Collection(ContextCollection)
}

// contextRefs are the session document and every context document, in
// the order decodeStored expects.
func (db *DB) contextRefs(sessionID string) []*firestore.DocumentRef {
	c := db.contextOf(sessionID)
	refs := []*firestore.DocumentRef{db.sessionRef(sessionID), c.Doc(headDocID), c.Doc(summaryDocID)}
	for i := range pageSlots {
		refs = append(refs, c.Doc(pageID(i)))
	}
	return refs
}

// contextDocIDs are the ids of every document a context may have.
func contextDocIDs() []string {
	ids := []string{headDocID, summaryDocID, legacyTailDocID, draftDocID}
	for i := range pageSlots {
		ids = append(ids, pageID(i))
	}
	return ids
}

// headDoc is chat_sessions/{sid}/context/head.
type headDoc struct {
	UserID          string    `firestore:"userId"`
	From            int       `firestore:"from"` // seq of the tail's first message
	Page            int       `firestore:"page"` // the page being filled
	CompactingUntil time.Time `firestore:"compactingUntil"`
}

// summaryDoc is chat_sessions/{sid}/context/summary.
type summaryDoc struct {
	UserID     string         `firestore:"userId"`
	Compaction *compactionDoc `firestore:"compaction"`
}

// pageDoc is chat_sessions/{sid}/context/pNN.
type pageDoc struct {
	UserID   string       `firestore:"userId"`
	Page     int          `firestore:"page"`
	Messages []tailMsgDoc `firestore:"messages"`
}

type tailMsgDoc struct {
	ID string `firestore:"id"`
	msgFields
}

// stored is a session and its context as read, with what a conditional
// write of them needs.
type stored struct {
	sessionID   string
	exists      bool      // the session document
	sessionTime time.Time // its update time
	headTime    time.Time // the head's update time; zero if there is none
	s           *sessions.Session
	t           *history.Tail
	head        headDoc
	pages       [pageSlots]*pageDoc // nil: no document in the slot
	summaryEnd  int                 // EndSeq of the summary read; -1 if none
	legacy      bool                // the context is in the legacy document
}

// decodeStored reads what contextRefs returned. A session whose context
// is still in the legacy document is marked so; the caller reads it.
func decodeStored(snaps []*firestore.DocumentSnapshot, sessionID string) (*stored, error) {
	st := &stored{sessionID: sessionID, summaryEnd: -1, t: &history.Tail{}}
	if !snaps[0].Exists() {
		return st, nil
	}
	s, err := decodeSession(snaps[0])
	if err != nil {
		return nil, err
	}
	st.exists, st.sessionTime, st.s = true, snaps[0].UpdateTime, s
	if !snaps[1].Exists() {
		st.legacy = s.NextSeq > 0
		return st, nil
	}
	st.headTime = snaps[1].UpdateTime
	if err := snaps[1].DataTo(&st.head); err != nil {
		return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	st.t.CompactingUntil = st.head.CompactingUntil.UTC()
	if snaps[2].Exists() {
		var d summaryDoc
		if err := snaps[2].DataTo(&d); err != nil {
			return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
		}
		if d.Compaction != nil {
			st.t.Compaction = fromCompactionDoc(history.CompactionID(d.Compaction.EndSeq), d.Compaction)
			st.summaryEnd = d.Compaction.EndSeq
		}
	}
	for i, snap := range snaps[3 : 3+pageSlots] {
		if !snap.Exists() {
			continue
		}
		var p pageDoc
		if err := snap.DataTo(&p); err != nil {
			return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
		}
		st.pages[i] = &p
		for j := range p.Messages {
			if p.Messages[j].Seq >= st.head.From {
				st.t.Messages = append(st.t.Messages, p.Messages[j].message(p.Messages[j].ID, sessionID))
			}
		}
	}
	slices.SortFunc(st.t.Messages, func(a, b history.Message) int { return a.Seq - b.Seq })
	return st, nil
}

// readLegacy reads the context of a session written by an earlier version
// from its single document; the next write moves it into pages.
func (db *DB) readLegacy(get getAll, st *stored) error {
	snaps, err := get([]*firestore.DocumentRef{db.contextOf(st.sessionID).Doc(legacyTailDocID)})
	if err != nil {
		return err
	}
	snap := snaps[0]
	if !snap.Exists() {
		return nil
	}
	var d struct {
		Messages        []tailMsgDoc   `firestore:"messages"`
		Compaction      *compactionDoc `firestore:"compaction"`
		CompactingUntil time.Time      `firestore:"compactingUntil"`
	}
	if err := snap.DataTo(&d); err != nil {
		return errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	st.t.CompactingUntil = d.CompactingUntil.UTC()
	if d.Compaction != nil {
		st.t.Compaction = fromCompactionDoc(history.CompactionID(d.Compaction.EndSeq), d.Compaction)
	}
	for i := range d.Messages {
		st.t.Messages = append(st.t.Messages, d.Messages[i].message(d.Messages[i].ID, st.sessionID))
	}
	return nil
}

// readStored reads a session and its context in one round trip (two for
// a session not yet moved to pages).
func (db *DB) readStored(get getAll, sessionID string, extra ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error) {
	refs := append(db.contextRefs(sessionID), extra...)
	snaps, err := get(refs)
	if err != nil {
		return nil, nil, err
	}
	st, err := decodeStored(snaps, sessionID)
	if err != nil {
		return nil, nil, err
	}
	if st.legacy {
		if err := db.readLegacy(get, st); err != nil {
			return nil, nil, err
		}
	}
	return st, snaps[len(snaps)-len(extra):], nil
}

// writeSession writes s in b on condition that the session document is as
// it was read (or, for a new session, that there is none).
func writeSession(w *writes, ref *firestore.DocumentRef, st *stored, s *sessions.Session) {
	if !st.exists {
		w.Create(ref, toSessionDoc(s))
		return
	}
	w.Update(ref, fieldUpdates(toSessionDoc(s)), firestore.LastUpdateTime(st.sessionTime))
}

// writeContext writes tail t of session s in b, changing only what differs
// from what was read (see layout), and the head on condition that it is
// as read. Every writer of a context writes its head, so that condition
// guards pages and summary too.
func (db *DB) writeContext(w *writes, st *stored, s *sessions.Session, t *history.Tail) (*pagePlan, error) {
	c := db.contextOf(s.ID)
	l, err := layout(c, st, s, t)
	if err != nil {
		return nil, err
	}
	if st.legacy {
		w.Delete(c.Doc(legacyTailDocID))
	}
	for _, slot := range l.del {
		w.Delete(c.Doc(pageID(slot)))
	}
	for slot, p := range l.set {
		w.Set(c.Doc(pageID(slot)), p)
	}
	if l.summary {
		w.Set(c.Doc(summaryDocID), summaryDoc{UserID: s.UserID, Compaction: toCompactionDoc(s.UserID, t.Compaction)})
	}
	if st.headTime.IsZero() {
		w.Create(c.Doc(headDocID), l.head)
	} else {
		w.Update(c.Doc(headDocID), fieldUpdates(l.head), firestore.LastUpdateTime(st.headTime))
	}
	return l, nil
}

// after returns what st becomes once a commit of w wrote session s and
// tail t as laid out by l (nil: the context was not written).
func (st *stored) after(w *writes, res []*firestore.WriteResult, sref, head *firestore.DocumentRef, s *sessions.Session, t *history.Tail, l *pagePlan) *stored {
	n := *st
	if s != nil {
		n.exists, n.s = true, s
		n.sessionTime, _ = w.time(res, sref)
	}
	if l != nil {
		n.t, n.head, n.legacy, n.summaryEnd = t, l.head, false, compactionEnd(t.Compaction)
		n.headTime, _ = w.time(res, head)
		for slot, p := range l.set {
			n.pages[slot] = p
		}
		for _, slot := range l.del {
			n.pages[slot] = nil
		}
	}
	return &n
}

// pagePlan is what writing a tail changes of its context documents.
type pagePlan struct {
	head    headDoc
	set     map[int]*pageDoc // slot → page to write
	del     []int            // slots whose page is to go
	summary bool             // the summary changed
}

// layout plans writing tail t over the context st read: new messages go
// to the page being filled, or to a new page once that one holds
// PageBytes; pages wholly before the tail's first message are deleted. A
// tail that is not the old one with messages dropped from the front and
// added at the end is laid out afresh.
func layout(c *firestore.CollectionRef, st *stored, s *sessions.Session, t *history.Tail) (*pagePlan, error) {
	l := &pagePlan{set: map[int]*pageDoc{}, summary: compactionEnd(t.Compaction) != st.summaryEnd,
		head: headDoc{UserID: s.UserID, From: s.NextSeq, Page: st.head.Page, CompactingUntil: t.CompactingUntil}}
	if len(t.Messages) > 0 {
		l.head.From = t.Messages[0].Seq
	}
	pages := st.pages
	last := -1
	if st.legacy || !onlyAppended(st.t.Messages, t.Messages) {
		clear(pages[:])
		l.head.Page++
	} else if n := len(st.t.Messages); n > 0 {
		last = st.t.Messages[n-1].Seq
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Seq <= last {
			continue // stored already
		}
		entry := tailMsgDoc{ID: m.ID, msgFields: toMsgFields(m)}
		slot := l.head.Page % pageSlots
		p := pages[slot]
		if p != nil && p.Page == l.head.Page && len(p.Messages) > 0 &&
			pageSize(c, slot, p)+valueSize(reflect.ValueOf(entry)) > PageBytes {
			l.head.Page++
			slot = l.head.Page % pageSlots
			p = pages[slot]
		}
		if p == nil || p.Page != l.head.Page {
			if p != nil && len(p.Messages) > 0 && p.Messages[len(p.Messages)-1].Seq >= l.head.From {
				return nil, errs.Errorf(errs.EINTERNAL, "context page %d of session %s would overwrite live messages", p.Page, s.ID)
			}
			p = &pageDoc{UserID: s.UserID, Page: l.head.Page}
		} else if l.set[slot] == nil {
			// Rewriting the page anyway: keep only what is still in the
			// window, so a small window costs a small page.
			cp := *p
			cp.Messages = slices.DeleteFunc(slices.Clone(p.Messages), func(e tailMsgDoc) bool { return e.Seq < l.head.From })
			p = &cp
		}
		pages[slot] = p
		p.Messages = append(p.Messages, entry)
		l.set[slot] = p
	}
	for i, p := range pages {
		switch {
		case p == nil:
			if st.pages[i] != nil {
				l.del = append(l.del, i)
			}
		case l.set[i] != nil:
			if n := pageSize(c, i, p); n > MaxDocBytes*9/10 {
				return nil, errs.Errorf(errs.EINTERNAL, "context page of %d bytes", n)
			}
		case p.Page != l.head.Page && (len(p.Messages) == 0 || p.Messages[len(p.Messages)-1].Seq < l.head.From):
			l.del = append(l.del, i) // wholly out of the tail
		}
	}
	return l, nil
}

func compactionEnd(c *history.Compaction) int {
	if c == nil {
		return -1
	}
	return c.EndSeq
}

// onlyAppended reports whether the new tail is the old one with messages
// dropped from its front and appended at its end: every old message from
// the new tail's first on is kept as it was, and every new one comes after
// the old ones (a switch to another branch keeps a prefix and drops the
// rest, which is not an append).
func onlyAppended(old, cur []history.Message) bool {
	if len(cur) == 0 {
		return true
	}
	ids := make(map[int]string, len(cur))
	for _, m := range cur {
		ids[m.Seq] = m.ID
	}
	last := -1
	for _, m := range old {
		last = m.Seq
		if m.Seq < cur[0].Seq {
			continue
		}
		if id, ok := ids[m.Seq]; !ok || id != m.ID {
			return false
		}
		delete(ids, m.Seq)
	}
	for seq := range ids { // the messages not in the old tail
		if seq <= last {
			return false
		}
	}
	return true
}

func pageSize(c *firestore.CollectionRef, slot int, p *pageDoc) int {
	return docSize(c.Doc(pageID(slot)), p)
}

// ReadTail reads the session and its tail in one round trip.
func (db *DB) ReadTail(ctx context.Context, sessionID string) (*sessions.Session, *history.Tail, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	st, _, err := db.readStored(db.getAllFn(ctx), sessionID)
	if err != nil {
		return nil, nil, translate(err)
	}
	if !st.exists {
		return nil, nil, sessions.NotFound(sessionID)
	}
	return st.s, st.t, nil
}

func (db *DB) UpdateTail(ctx context.Context, sessionID string, fn func(*sessions.Session, *history.Tail) error) error {
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		st, _, err := db.readStored(get, sessionID)
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(sessionID)
		}
		s, t := st.s.Clone(), st.t.Clone()
		if err := fn(s, t); err != nil {
			return nil, err
		}
		w := db.newWrites()
		if !reflect.DeepEqual(s, st.s) {
			writeSession(w, db.sessionRef(sessionID), st, s)
		}
		_, err = db.writeContext(w, st, s, t)
		return w, err
	})
	return err
}

func (db *DB) SaveCompaction(ctx context.Context, sessionID string, c *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	cref := db.sessionRef(sessionID).Collection(CompactionsCollection).Doc(c.ID)
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		st, extra, err := db.readStored(get, sessionID, cref)
		if err != nil {
			return nil, err
		}
		if !st.exists {
			return nil, sessions.NotFound(sessionID)
		}
		if extra[0].Exists() {
			return nil, errs.Errorf(errs.ECONFLICT, "compaction %s exists", c.ID)
		}
		s, t := st.s.Clone(), st.t.Clone()
		if err := fn(s, t); err != nil {
			return nil, err
		}
		w := db.newWrites()
		w.Create(cref, toCompactionDoc(s.UserID, c))
		writeSession(w, db.sessionRef(sessionID), st, s)
		_, err = db.writeContext(w, st, s, t)
		return w, err
	})
	return err
}

func (db *DB) ListCompactions(ctx context.Context, sessionID string) ([]history.Compaction, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.sessionRef(sessionID).Collection(CompactionsCollection).OrderBy("endSeq", firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]history.Compaction, 0, len(snaps))
	for _, snap := range snaps {
		var d compactionDoc
		if err := snap.DataTo(&d); err != nil {
			return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
		}
		out = append(out, *fromCompactionDoc(snap.Ref.ID, &d))
	}
	return out, nil
}
