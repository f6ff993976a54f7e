package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// historyUTC is h with its times in UTC, as read.
func historyUTC(h longterm.History) longterm.History {
	h.RolledUpAt = h.RolledUpAt.UTC()
	for i := range h.Episodes {
		h.Episodes[i].At = h.Episodes[i].At.UTC()
	}
	for i := range h.Notes {
		for j := range h.Notes[i].Episodes {
			h.Notes[i].Episodes[j].At = h.Notes[i].Episodes[j].At.UTC()
		}
	}
	for _, t := range []*longterm.Tier{&h.Recent, &h.Months, &h.Earlier} {
		t.UpdatedAt = utc(t.UpdatedAt)
	}
	return h
}

// SessionsUpdatedSince queries sessions by updatedAt (a single-field
// index), whole: a read each, as reading only their owners would be.
func (db *DB) SessionsUpdatedSince(ctx context.Context, since time.Time, after *sessions.Cursor, limit int) ([]*sessions.Session, *sessions.Cursor, error) {
	q := db.client.Collection(SessionsCollection).Where("updatedAt", ">", since).
		OrderBy("updatedAt", firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != nil {
		q = q.StartAfter(after.UpdatedAt, after.ID)
	}
	ctx, cancel := db.op(ctx)
	defer cancel()
	out, err := readSessions(ctx, q)
	if err != nil || len(out) < limit {
		return out, nil, err
	}
	last := out[len(out)-1]
	return out, &sessions.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}, nil
}

// HistoriesToRoll queries memory documents by historyDueAt (a
// single-field index; null, never matched, without a history).
func (db *DB) HistoriesToRoll(ctx context.Context, now time.Time, after *sessions.Cursor, limit int) ([]string, *sessions.Cursor, error) {
	return db.usersBy(ctx, db.client.Collection(UsersCollection).Where("historyDueAt", "<=", now), "historyDueAt", after, limit)
}

// usersBy pages q (filtered on the time field) by field and document id,
// and returns its documents' userId, and the cursor after the last if
// the page is full.
func (db *DB) usersBy(ctx context.Context, q firestore.Query, field string, after *sessions.Cursor, limit int) ([]string, *sessions.Cursor, error) {
	q = q.OrderBy(field, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).Select("userId", field).Limit(limit)
	if after != nil {
		q = q.StartAfter(after.UpdatedAt, after.ID)
	}
	snaps, err := db.getAll(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, 0, len(snaps))
	for _, snap := range snaps {
		if uid, _ := snap.DataAt("userId"); uid != nil {
			out = append(out, uid.(string))
		}
	}
	if len(snaps) < limit {
		return out, nil, nil
	}
	last := snaps[len(snaps)-1]
	at, _ := last.DataAt(field)
	t, _ := at.(time.Time)
	return out, &sessions.Cursor{UpdatedAt: t, ID: last.Ref.ID}, nil
}

type rollUpMark struct {
	At time.Time `firestore:"at"`
}

func (db *DB) RollUpMark(ctx context.Context) (time.Time, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.client.Collection(SweepsCollection).Doc("rollup").Get(ctx)
	if status.Code(err) == codes.NotFound {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, translate(err)
	}
	var m rollUpMark
	if err := snap.DataTo(&m); err != nil {
		return time.Time{}, translate(err)
	}
	return m.At.UTC(), nil
}

func (db *DB) SetRollUpMark(ctx context.Context, t time.Time) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.client.Collection(SweepsCollection).Doc("rollup").Set(ctx, rollUpMark{At: t})
	return translate(err)
}
