package inprocdb

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// A trimmed message leaves a tombstone (a message without an id) at its
// seq, so that a session's messages stay indexed by seq; every read skips
// tombstones.

func (db *DB) CountHistoriesDue(ctx context.Context, q retention.TrimQuery) (int, error) {
	all, err := db.HistoriesDue(ctx, q, nil, math.MaxInt)
	return len(all), err
}

func (db *DB) HistoriesDue(_ context.Context, q retention.TrimQuery, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	type due struct {
		at time.Time
		s  *sessions.Session
	}
	var out []due
	for _, s := range db.sessions {
		at := s.Bookkeeping.HistoryStartAt
		if q.OwnPeriod {
			at = s.HistoryExpiresAt()
		}
		if at.IsZero() || at.After(q.At) {
			continue
		}
		if after != nil && (at.Before(after.ExpiresAt) || (at.Equal(after.ExpiresAt) && s.ID <= after.ID)) {
			continue
		}
		out = append(out, due{at, s.Clone()})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.Before(out[j].at)
		}
		return out[i].s.ID < out[j].s.ID
	})
	list := make([]*sessions.Session, 0, min(limit, len(out)))
	for _, d := range out[:min(limit, len(out))] {
		list = append(list, d.s)
	}
	return list, nil
}

func (db *DB) FirstMessageAfter(_ context.Context, sessionID string, t time.Time) (int, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	seq, first := 0, time.Time{}
	for _, m := range db.messages[sessionID] {
		if m.ID != "" && m.CreatedAt.After(t) && (first.IsZero() || m.CreatedAt.Before(first)) {
			seq, first = m.Seq, m.CreatedAt
		}
	}
	return seq, !first.IsZero(), nil
}

func (db *DB) TrimMessages(_ context.Context, sessionID string, before, limit int, fn retention.TrimFunc) (int, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return 0, false, sessions.NotFound(sessionID)
	}
	all := db.messages[sessionID]
	var gone []history.Message
	for i := 0; i < min(before, len(all)) && len(gone) < limit; i++ {
		if all[i].ID != "" {
			gone = append(gone, cloneMessage(all[i]))
		}
	}
	done := len(gone) < limit
	c, t := s.Clone(), db.tail(sessionID)
	if err := fn(c, t, gone, done); err != nil {
		return 0, false, err
	}
	var more []history.Message
	for _, seq := range recall.Followers(s, gone, before) {
		if seq < len(all) && all[seq].ID != "" {
			more = append(more, all[seq])
		}
	}
	for _, id := range recall.Holding(gone, more) {
		delete(db.recall[sessionID], id)
	}
	trimmed := map[int]bool{}
	for _, m := range gone {
		all[m.Seq] = history.Message{Seq: m.Seq}
		trimmed[m.Seq] = true
		delete(db.replies[sessionID], m.ID)
	}
	for key, seqs := range db.keys[sessionID] {
		if len(seqs) > 0 && trimmed[seqs[0]] {
			delete(db.keys[sessionID], key)
		}
	}
	db.sessions[sessionID] = c
	db.tails[sessionID] = t
	return len(gone), done, nil
}
