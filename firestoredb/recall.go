package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// RecallCollection holds a session's embedded exchanges:
// chat_sessions/{sid}/recall/{replyId}. Searches query it as a collection
// group, pre-filtered by userId (and sessionId), nearest first; the vector
// index they need is declared in firestore.indexes.json.
const RecallCollection = "recall"

// exchangeDoc is chat_sessions/{sid}/recall/{replyId}.
type exchangeDoc struct {
	UserID     string             `firestore:"userId"`
	SessionID  string             `firestore:"sessionId"`
	QuestionID string             `firestore:"questionId"`
	Seq        int                `firestore:"seq"`
	CreatedAt  time.Time          `firestore:"createdAt"`
	Model      string             `firestore:"model"`
	Embedding  firestore.Vector32 `firestore:"embedding"`
}

// recallMarkerDocID is context/recall, written once with a session's first
// exchange: a purge looks for exchanges only under a session that has it.
// (A mark on the session document would change its version under an app
// that holds it for ifMatch.)
const recallMarkerDocID = "recall"

func (db *DB) recallOf(sessionID string) *firestore.CollectionRef {
	return db.sessionRef(sessionID).Collection(RecallCollection)
}

// SaveExchange stores e in a transaction that reads its session, so that a
// purge (which deletes the session document first) and an exchange saved
// after it cannot both land: nothing is left under a purged session.
func (db *DB) SaveExchange(ctx context.Context, e recall.Exchange) error {
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
			if err := tx.Create(mref, map[string]any{"userId": e.UserID}); err != nil {
				return err
			}
		}
		return tx.Set(db.recallOf(e.SessionID).Doc(e.Answer), exchangeDoc{UserID: e.UserID, SessionID: e.SessionID,
			QuestionID: e.QuestionID, Seq: e.Seq, CreatedAt: e.CreatedAt, Model: e.Model, Embedding: firestore.Vector32(e.Vector)})
	})
}

// Nearest runs one vector query, then reads the sessions and messages of
// what it found in one batched read.
func (db *DB) Nearest(ctx context.Context, userID, sessionID string, v []float32, k int) ([]recall.Hit, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	q := db.client.CollectionGroup(RecallCollection).Where("userId", "==", userID)
	if sessionID != "" {
		q = q.Where("sessionId", "==", sessionID)
	}
	snaps, err := q.FindNearest("embedding", firestore.Vector32(v), k, firestore.DistanceMeasureCosine,
		&firestore.FindNearestOptions{DistanceResultField: "distance"}).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	hits := make([]recall.Hit, 0, len(snaps))
	var refs []*firestore.DocumentRef
	seen := map[string]bool{}
	for _, snap := range snaps {
		var d exchangeDoc
		if err := dataTo(snap, &d); err != nil {
			return nil, err
		}
		dist, _ := snap.DataAt("distance")
		f, _ := dist.(float64)
		hits = append(hits, recall.Hit{Distance: f, Exchange: recall.Exchange{UserID: d.UserID, SessionID: d.SessionID,
			QuestionID: d.QuestionID, Answer: snap.Ref.ID, Seq: d.Seq, CreatedAt: d.CreatedAt, Model: d.Model}})
		if !seen[d.SessionID] {
			seen[d.SessionID] = true
			refs = append(refs, db.sessionRef(d.SessionID))
		}
		refs = append(refs, db.messagesOf(d.SessionID).Doc(d.QuestionID), db.messagesOf(d.SessionID).Doc(snap.Ref.ID))
	}
	if len(refs) == 0 {
		return hits, nil
	}
	got, err := db.client.GetAll(ctx, refs)
	if err != nil {
		return nil, translate(err)
	}
	byPath := make(map[string]*firestore.DocumentSnapshot, len(got))
	for _, s := range got {
		byPath[s.Ref.Path] = s
	}
	msg := func(sessionID, id string) (*history.Message, error) {
		s := byPath[db.messagesOf(sessionID).Doc(id).Path]
		if s == nil || !s.Exists() {
			return nil, nil
		}
		m, _, err := decodeMessage(s)
		return &m, err
	}
	for i := range hits {
		e := &hits[i].Exchange
		if s := byPath[db.sessionRef(e.SessionID).Path]; s != nil && s.Exists() {
			if hits[i].Session, err = decodeSession(s); err != nil {
				return nil, err
			}
		}
		if hits[i].Question, err = msg(e.SessionID, e.QuestionID); err != nil {
			return nil, err
		}
		if hits[i].Reply, err = msg(e.SessionID, e.Answer); err != nil {
			return nil, err
		}
	}
	return hits, nil
}
