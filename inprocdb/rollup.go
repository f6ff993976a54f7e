package inprocdb

import (
	"context"
	"sort"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// SessionsUpdatedSince lists the sessions updated after since, by
// updatedAt then id.
func (db *DB) SessionsUpdatedSince(_ context.Context, since time.Time, after *sessions.Cursor, limit int) ([]*sessions.Session, *sessions.Cursor, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for _, s := range db.sessions {
		if !s.UpdatedAt.After(since) {
			continue
		}
		if after != nil && (s.UpdatedAt.Before(after.UpdatedAt) || (s.UpdatedAt.Equal(after.UpdatedAt) && s.ID <= after.ID)) {
			continue
		}
		out = append(out, s.Clone())
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.Before(out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
	if len(out) <= limit {
		return out, nil, nil
	}
	out = out[:limit]
	last := out[limit-1]
	return out, &sessions.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}, nil
}

// HistoriesToRoll lists the users whose history is due at now, by due
// time then user id.
func (db *DB) HistoriesToRoll(_ context.Context, now time.Time, after *sessions.Cursor, limit int) ([]string, *sessions.Cursor, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var rows []row
	for id, u := range db.users {
		if due := u.History.DueAt(u.UpdatedAt); !due.IsZero() && !due.After(now) {
			rows = append(rows, row{due, id, id})
		}
	}
	return page(rows, after, limit)
}

type row struct {
	at       time.Time
	id, user string
}

// page is the rows after the cursor, ordered, up to limit, and the
// cursor of the next page (nil on the last).
func page(rows []row, after *sessions.Cursor, limit int) ([]string, *sessions.Cursor, error) {
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].at.Equal(rows[j].at) {
			return rows[i].at.Before(rows[j].at)
		}
		return rows[i].id < rows[j].id
	})
	var out []string
	var last row
	for _, r := range rows {
		if after != nil && (r.at.Before(after.UpdatedAt) || (r.at.Equal(after.UpdatedAt) && r.id <= after.ID)) {
			continue
		}
		if len(out) == limit {
			return out, &sessions.Cursor{UpdatedAt: last.at, ID: last.id}, nil
		}
		out, last = append(out, r.user), r
	}
	return out, nil, nil
}

func (db *DB) RollUpMark(context.Context) (time.Time, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.rollUpMark, nil
}

func (db *DB) SetRollUpMark(_ context.Context, t time.Time) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.rollUpMark = t
	return nil
}
