package inprocdb

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/chatmemory/backend/retention"
)

// AccountsSeenBefore returns up to limit accounts last seen before t, by
// SeenAt then UserID, after cursor.
func (db *DB) AccountsSeenBefore(_ context.Context, t time.Time, after *retention.AccountCursor, limit int) ([]retention.Account, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []retention.Account
	for uid, at := range db.accounts {
		if !at.Before(t) {
			continue
		}
		if after != nil && (at.Before(after.SeenAt) || at.Equal(after.SeenAt) && uid <= after.UserID) {
			continue
		}
		out = append(out, retention.Account{UserID: uid, SeenAt: at})
	}
	slices.SortFunc(out, func(a, b retention.Account) int {
		if c := a.SeenAt.Compare(b.SeenAt); c != 0 {
			return c
		}
		return strings.Compare(a.UserID, b.UserID)
	})
	return out[:min(limit, len(out))], nil
}

// RecordAccount records userID as seen at at, unless they are.
func (db *DB) RecordAccount(_ context.Context, userID string, at time.Time) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.accounts[userID]; !ok {
		db.accounts[userID] = at
	}
	return nil
}

// MarkSeen records the accounts still recorded as seen at at.
func (db *DB) MarkSeen(_ context.Context, userIDs []string, at time.Time) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, uid := range userIDs {
		if _, ok := db.accounts[uid]; ok {
			db.accounts[uid] = at
		}
	}
	return nil
}
