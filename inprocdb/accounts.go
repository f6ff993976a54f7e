package inprocdb

import (
	"context"
	"maps"
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

// HoldersAfter pages the users who hold memory, then those who hold a
// per-minute quota, by uid; the cursor is "memory/{uid}" or "usage/{uid}".
// Each is as of its memory's last update, or its per-minute quota's minute.
func (db *DB) HoldersAfter(_ context.Context, after string, limit int) ([]retention.Account, string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	kinds := []string{"memory", "usage"}
	i, key := 0, ""
	if k, uid, ok := strings.Cut(after, "/"); ok {
		i, key = slices.Index(kinds, k), uid
	}
	for ; i >= 0 && i < len(kinds); i, key = i+1, "" {
		var uids []string
		if i == 0 {
			uids = slices.Sorted(maps.Keys(db.users))
		} else {
			uids = slices.Sorted(maps.Keys(db.usage))
		}
		start, _ := slices.BinarySearch(uids, key)
		if key != "" && start < len(uids) && uids[start] == key {
			start++
		}
		page := uids[start:min(len(uids), start+limit)]
		if len(page) == 0 {
			continue
		}
		out := make([]retention.Account, len(page))
		for j, uid := range page {
			out[j] = retention.Account{UserID: uid, SeenAt: db.users[uid].UpdatedAt}
			if i == 1 {
				u := db.usage[uid]
				out[j].SeenAt = time.Unix(max(u.Minute, u.SearchMinute)*60, 0).UTC()
			}
		}
		return out, kinds[i] + "/" + page[len(page)-1], nil
	}
	return nil, "", nil
}
