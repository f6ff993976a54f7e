package inprocdb

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// SaveUnit stores e if its session is there and not deleted.
func (db *DB) SaveUnit(_ context.Context, e recall.Unit) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[e.SessionID]
	if !ok || s.UserID != e.UserID || s.Status == sessions.StatusDeleted {
		return sessions.NotFound(e.SessionID)
	}
	if db.recall[e.SessionID] == nil {
		db.recall[e.SessionID] = map[string]recall.Unit{}
	}
	e.Vector, e.Tools = slices.Clone(e.Vector), slices.Clone(e.Tools)
	e.SessionTitle = s.Title
	e.Bag = cloneBag(e.Bag)
	db.recall[e.SessionID][e.ID()] = e
	return nil
}

// Lexical finds, for each term, up to q.PerTerm of the user's units that
// hold it (with q.Any, up to q.PerTerm holding any), in order of session
// and unit id, as Firestore's queries find them in order of path.
func (db *DB) Lexical(_ context.Context, q recall.LexicalQuery) (recall.LexicalHits, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	units := db.unitsOf(q.UserID, q.SessionID)
	out := recall.LexicalHits{Found: map[string]int{}}
	var picked []recall.Unit
	if q.Any {
		picked = pickAny(units, q, out.Found)
	} else {
		picked = pickEach(units, q, out.Found)
	}
	for _, e := range picked {
		h := recall.Hit{Unit: e}
		h.Unit.Vector, h.Unit.Bag = slices.Clone(e.Vector), cloneBag(e.Bag)
		out.Hits = append(out.Hits, h)
	}
	return out, nil
}

// unitsOf are userID's units (of sessionID only, unless it is ""), in the
// order of their session's id and, within a session, of their messages:
// an order that does not depend on the ids messages were given.
func (db *DB) unitsOf(userID, sessionID string) []recall.Unit {
	var units []recall.Unit
	for _, sid := range slices.Sorted(maps.Keys(db.recall)) {
		if sessionID != "" && sid != sessionID {
			continue
		}
		for _, e := range db.recall[sid] {
			if e.UserID == userID {
				units = append(units, e)
			}
		}
	}
	slices.SortFunc(units, byPlace)
	return units
}

// pickAny picks the first PerTerm units holding any of q's terms, as one
// array-contains-any query does, and counts into found how many of them
// hold each term.
func pickAny(units []recall.Unit, q recall.LexicalQuery, found map[string]int) []recall.Unit {
	var picked []recall.Unit
	for _, e := range units {
		if len(picked) < q.PerTerm && holds(e, q.Terms...) {
			picked = append(picked, e)
		}
	}
	for _, e := range picked {
		for _, t := range q.Terms {
			if holds(e, t) {
				found[t]++
			}
		}
	}
	return picked
}

// pickEach picks, for each of q's terms, the first PerTerm units holding
// it, as one query a term does: each unit once, and into found how many
// each term's query found (none too).
func pickEach(units []recall.Unit, q recall.LexicalQuery, found map[string]int) []recall.Unit {
	var picked []recall.Unit
	seen := map[string]bool{}
	for _, t := range q.Terms {
		found[t] = 0
		for _, e := range units {
			if found[t] < q.PerTerm && holds(e, t) {
				found[t]++
				if !seen[e.ID()] {
					seen[e.ID()] = true
					picked = append(picked, e)
				}
			}
		}
	}
	return picked
}

// holds tells whether unit e holds any of terms.
func holds(e recall.Unit, terms ...string) bool {
	for _, t := range terms {
		if e.Bag.TF[t] > 0 {
			return true
		}
	}
	return false
}

func cloneBag(b recall.Bag) recall.Bag {
	tf := make(map[string]int, len(b.TF))
	for t, n := range b.TF {
		tf[t] = n
	}
	return recall.Bag{Terms: slices.Clone(b.Terms), TF: tf, Len: b.Len, Lexicon: b.Lexicon}
}

// SessionsOf reads sessions by id.
func (db *DB) SessionsOf(_ context.Context, ids []string) (map[string]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make(map[string]*sessions.Session, len(ids))
	for _, id := range ids {
		if s, ok := db.sessions[id]; ok {
			out[id] = s.Clone()
		}
	}
	return out, nil
}

// Nearest ranks every exchange of the user by brute force.
func (db *DB) Nearest(_ context.Context, q recall.Query) ([]recall.Hit, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var hits []recall.Hit
	for sid, byID := range db.recall {
		if q.SessionID != "" && sid != q.SessionID {
			continue
		}
		for _, e := range byID {
			if e.UserID != q.UserID {
				continue
			}
			h := recall.Hit{Unit: e, Distance: recall.Cosine(e.Vector, q.Vector)}
			h.Unit.Vector = nil
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b recall.Hit) int { // ties by place, the same way every time
		return cmp.Or(cmp.Compare(a.Distance, b.Distance), byPlace(a.Unit, b.Unit))
	})
	return hits[:min(q.K, len(hits))], nil
}

// byPlace orders units by their session's id, then by their first
// message's seq.
func byPlace(a, b recall.Unit) int {
	return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(firstSeq(a), firstSeq(b)))
}

// firstSeq is the seq of e's first message.
func firstSeq(e recall.Unit) int {
	switch {
	case len(e.Tools) > 0:
		return e.Tools[0].Seq
	case e.Question.ID != "":
		return e.Question.Seq
	}
	return e.Reply.Seq
}

// SessionsAfter pages every user's sessions by id.
func (db *DB) SessionsAfter(_ context.Context, after string, limit int) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for id, s := range db.sessions {
		if id > after {
			out = append(out, s.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *sessions.Session) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(limit, len(out))], nil
}

// Embedded returns how a session's stored exchanges were indexed.
func (db *DB) Embedded(_ context.Context, _, sessionID string) (map[string]recall.Indexed, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := map[string]recall.Indexed{}
	for id, e := range db.recall[sessionID] {
		if e.Bag.TF != nil { // one stored without its words is stored again
			out[id] = recall.Indexed{Model: e.Model, Lexicon: e.Bag.Lexicon}
		}
	}
	return out, nil
}

// CountUnits counts userID's stored exchanges.
func (db *DB) CountUnits(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := 0
	for _, byID := range db.recall {
		for _, e := range byID {
			if e.UserID == userID {
				n++
			}
		}
	}
	return n, nil
}

// Visibility tells userID's deleted and archived sessions and each
// session's messages off its active branch, from the sessions themselves.
func (db *DB) Visibility(_ context.Context, userID string) (recall.Visibility, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.visibility(userID), nil
}

func (db *DB) visibility(userID string) recall.Visibility {
	v := recall.Visibility{Deleted: []string{}, Archived: []string{}}
	for id, s := range db.sessions {
		if s.UserID != userID {
			continue
		}
		switch s.Status {
		case sessions.StatusDeleted:
			v.Deleted = append(v.Deleted, id)
		case sessions.StatusArchived:
			v.Archived = append(v.Archived, id)
		}
		if off := s.OffPath(); len(off) > 0 {
			if v.OffPath == nil {
				v.OffPath = map[string]sessions.Path{}
			}
			v.OffPath[id] = off
		}
	}
	return v
}

// retitle gives the units of session id its title.
func (db *DB) retitle(id, title string) {
	for u, e := range db.recall[id] {
		e.SessionTitle = title
		db.recall[id][u] = e
	}
}
