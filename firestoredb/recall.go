package firestoredb

import (
	"cmp"
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// RecallCollection holds a user's units of search:
// chat_usage/{user}/recall/{unitId} (see unitsOf). Searches query the
// user's collection (by sessionId for one session), nearest first; the
// vector indexes they need are declared in firestore.indexes.json. Account
// erasure sweeps it as a collection group by userId.
const RecallCollection = "recall"

// unitDoc is chat_usage/{user}/recall/{unitId}: the vector and the
// start of both messages (their texts are exempt from indexing).
type unitDoc struct {
	UserID       string             `firestore:"userId"`
	SessionID    string             `firestore:"sessionId"`
	SessionTitle string             `firestore:"sessionTitle,omitempty"`
	Question     excerptDoc         `firestore:"question"`
	Reply        excerptDoc         `firestore:"reply"`
	Tools        []excerptDoc       `firestore:"tools,omitempty"` // a tool round's results
	Model        string             `firestore:"model"`
	Embedding    firestore.Vector32 `firestore:"embedding"`
	// The lexical leg's: the distinct terms, and the same as the keys of
	// Has (an equality query, has.{term} == true, finds the unit by
	// them: the emulator answers it from its index, where it scans every
	// unit for an array-contains query), their counts and the unit's
	// length in terms (counts are exempt from indexing).
	Terms   []string        `firestore:"terms,omitempty"`
	Has     map[string]bool `firestore:"has,omitempty"`
	TF      map[string]int  `firestore:"tf,omitempty"`
	Len     int             `firestore:"len"`
	Lexicon int             `firestore:"lexicon,omitempty"` // 0: 1 (see recall.Lexicon)
}

// SaveUnit stores e in a transaction that reads its session, so that a
// purge (which deletes the session document first) and an exchange saved
// after it cannot both land: nothing is left under a purged session.
func (db *DB) SaveUnit(ctx context.Context, e recall.Unit) error {
	sref, mref := db.sessionRef(e.SessionID), db.contextOf(e.SessionID).Doc(recallMarkerDocID)
	return db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{sref, mref})
		if err != nil {
			return err
		}
		if !snaps[0].Exists() {
			return sessions.NotFound(e.SessionID)
		}
		s, err := decodeSession(snaps[0])
		if err != nil {
			return err
		}
		if s.UserID != e.UserID || s.Status == sessions.StatusDeleted {
			return sessions.NotFound(e.SessionID)
		}
		if !snaps[1].Exists() { // once: a purge then looks for exchanges
			if err := tx.Create(mref, map[string]any{"userId": e.UserID, userUnitsField: true}); err != nil {
				return err
			}
		}
		var tools []excerptDoc
		for _, t := range e.Tools {
			tools = append(tools, toExcerptDoc(t))
		}
		return tx.Set(db.unitsOf(e.UserID).Doc(e.ID()), unitDoc{UserID: e.UserID, SessionID: e.SessionID, SessionTitle: s.Title,
			Question: toExcerptDoc(e.Question), Reply: toExcerptDoc(e.Reply), Tools: tools, Model: e.Model, Embedding: firestore.Vector32(e.Vector),
			Terms: e.Bag.Terms, Has: has(e.Bag.Terms), TF: e.Bag.TF, Len: e.Bag.Len, Lexicon: e.Bag.Lexicon})
	})
}

// has is the set of terms, as a unit's has map.
func has(terms []string) map[string]bool {
	out := make(map[string]bool, len(terms))
	for _, t := range terms {
		out[t] = true
	}
	return out
}

type excerptDoc struct {
	ID        string    `firestore:"id"`
	Seq       int       `firestore:"seq"`
	Text      string    `firestore:"text"`
	Clipped   bool      `firestore:"clipped,omitempty"`
	CreatedAt time.Time `firestore:"createdAt"`
}

func toExcerptDoc(x recall.Excerpt) excerptDoc {
	return excerptDoc{ID: x.ID, Seq: x.Seq, Text: x.Content, Clipped: x.Clipped, CreatedAt: x.CreatedAt}
}

// Nearest runs one vector query.
func (db *DB) Nearest(ctx context.Context, q recall.Query) ([]recall.Hit, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	fq := db.unitsOf(q.UserID).Query
	if q.SessionID != "" {
		fq = fq.Where("sessionId", "==", q.SessionID)
	}
	snaps, err := fq.FindNearest("embedding", firestore.Vector32(q.Vector), q.K, firestore.DistanceMeasureCosine,
		&firestore.FindNearestOptions{DistanceResultField: "distance"}).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	hits := make([]recall.Hit, 0, len(snaps))
	for _, snap := range snaps {
		var d unitDoc
		if err := dataTo(snap, &d); err != nil {
			return nil, err
		}
		dist, _ := snap.DataAt("distance")
		f, _ := dist.(float64)
		hits = append(hits, recall.Hit{Distance: f, Unit: d.unit()})
	}
	return hits, nil
}

// SessionsOf reads sessions by id in one batched read.
func (db *DB) SessionsOf(ctx context.Context, ids []string) (map[string]*sessions.Session, error) {
	byID := make(map[string]*sessions.Session, len(ids))
	if len(ids) == 0 {
		return byID, nil
	}
	refs := make([]*firestore.DocumentRef, len(ids))
	for i, id := range ids {
		refs[i] = db.sessionRef(id)
	}
	ctx, cancel := db.op(ctx)
	defer cancel()
	got, err := db.client.GetAll(ctx, refs)
	if err != nil {
		return byID, translate(err)
	}
	for _, snap := range got {
		if snap.Exists() {
			if byID[snap.Ref.ID], err = decodeSession(snap); err != nil {
				return byID, err
			}
		}
	}
	return byID, nil
}

// Lexical runs one query for each term, all at once: the user's units
// that hold it (has.{term} == true on the user's collection, with, for
// one session, sessionId: equalities Firestore serves by merging
// single-field indexes, declared in firestore.indexes.json), at most
// q.PerTerm each (with q.Any, one array-contains-any query of at most
// q.PerTerm on terms).
func (db *DB) Lexical(ctx context.Context, q recall.LexicalQuery) (recall.LexicalHits, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	units := db.unitsOf(q.UserID).Query
	if q.SessionID != "" {
		units = units.Where("sessionId", "==", q.SessionID)
	}
	found, err := getEach(ctx, lexicalQueries(units, q))
	if err != nil {
		return recall.LexicalHits{Found: map[string]int{}}, err
	}
	return lexicalHits(q, found)
}

// lexicalQueries are the queries q asks of units: one a term, of at most
// PerTerm units holding it, or, with Any, one of units holding any term.
func lexicalQueries(units firestore.Query, q recall.LexicalQuery) []firestore.Query {
	if q.Any {
		return []firestore.Query{units.Where("terms", "array-contains-any", q.Terms).Limit(q.PerTerm)}
	}
	out := make([]firestore.Query, len(q.Terms))
	for i, term := range q.Terms {
		out[i] = holding(units, term).Limit(q.PerTerm)
	}
	return out
}

// getEach runs queries at once, and returns what each found.
func getEach(ctx context.Context, queries []firestore.Query) ([][]*firestore.DocumentSnapshot, error) {
	return allAtOnce(len(queries), func(i int) ([]*firestore.DocumentSnapshot, error) {
		snaps, err := queries[i].Documents(ctx).GetAll()
		return snaps, translate(err)
	})
}

// holding narrows units to those holding term (terms are letters and
// digits: a field path's part as they are).
func holding(units firestore.Query, term string) firestore.Query {
	return units.Where("has."+term, "==", true)
}

// allAtOnce runs fn(0..n-1) at once and returns what each returned, or
// the first error (by index).
func allAtOnce[T any](n int, fn func(i int) (T, error)) ([]T, error) {
	out, errs := make([]T, n), make([]error, n)
	parallel.Each(n, n, func(i int) { out[i], errs[i] = fn(i) })
	if err := cmp.Or(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// lexicalHits are the units the queries of q found, each once, and for
// each term how many of them hold it.
func lexicalHits(q recall.LexicalQuery, found [][]*firestore.DocumentSnapshot) (recall.LexicalHits, error) {
	out := recall.LexicalHits{Found: map[string]int{}}
	seen := map[string]bool{}
	for i, snaps := range found {
		if !q.Any {
			out.Found[q.Terms[i]] = len(snaps)
		}
		for _, snap := range snaps {
			if seen[snap.Ref.Path] {
				continue
			}
			seen[snap.Ref.Path] = true
			var d unitDoc
			if err := dataTo(snap, &d); err != nil {
				return out, err
			}
			out.Hits = append(out.Hits, recall.Hit{Unit: d.unit()})
			if q.Any {
				for _, t := range q.Terms {
					if d.TF[t] > 0 {
						out.Found[t]++
					}
				}
			}
		}
	}
	return out, nil
}

// exchange is the unit d holds.
func (d unitDoc) unit() recall.Unit {
	var tools []recall.Excerpt
	for _, t := range d.Tools {
		tools = append(tools, t.excerpt())
	}
	return recall.Unit{UserID: d.UserID, SessionID: d.SessionID, SessionTitle: d.SessionTitle,
		Question: d.Question.excerpt(), Reply: d.Reply.excerpt(), Tools: tools, Model: d.Model, Vector: []float32(d.Embedding),
		Bag: recall.Bag{Terms: d.Terms, TF: d.TF, Len: d.Len, Lexicon: max(d.Lexicon, 1)}}
}

func (d excerptDoc) excerpt() recall.Excerpt {
	return recall.Excerpt{ID: d.ID, Seq: d.Seq, Content: d.Text, Clipped: d.Clipped, CreatedAt: d.CreatedAt}
}

// SessionsAfter pages every user's sessions by document id.
func (db *DB) SessionsAfter(ctx context.Context, after string, limit int) ([]*sessions.Session, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	q := db.client.Collection(SessionsCollection).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != "" {
		q = q.StartAfter(after)
	}
	return readSessions(ctx, q)
}

// Embedded reads how a session's stored exchanges were indexed (their
// model, length and lexicon fields only); one stored before units kept
// their words is left out, so that a backfill stores it again with them.
func (db *DB) Embedded(ctx context.Context, userID, sessionID string) (map[string]recall.Indexed, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.sessionUnits(userID, sessionID).Select("model", "len", "lexicon").Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[string]recall.Indexed, len(snaps))
	for _, snap := range snaps {
		if n, _ := snap.DataAt("len"); n == nil {
			continue
		}
		var d struct {
			Model   string `firestore:"model"`
			Lexicon int    `firestore:"lexicon"`
		}
		if err := dataTo(snap, &d); err != nil {
			return nil, err
		}
		out[snap.Ref.ID] = recall.Indexed{Model: d.Model, Lexicon: max(d.Lexicon, 1)}
	}
	return out, nil
}

// recallMarkerDocID is context/recall, written once with a session's first
// exchange: a purge looks for exchanges only under a session that has it.
// (A mark on the session document would change its version under an app
// that holds it for ifMatch.)
const recallMarkerDocID = "recall"

// userUnitsField, true on a recall marker, says that its session's units
// of search were only ever saved in their user's collection (unitsOf): set
// by this version's first save. Under a marker without it, a purge deletes
// them where they were kept before too (legacyRecallOf), in case cmd/migrate
// has not moved them yet.
const userUnitsField = "userUnits"

// CountUnits counts userID's stored exchanges (an aggregation).
func (db *DB) CountUnits(ctx context.Context, userID string) (int, error) {
	return db.count(ctx, db.unitsOf(userID).Query)
}
