package inprocdb

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

func (db *DB) UpdateUsage(_ context.Context, userID, day string, fn func(*chat.Usage) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	u := db.usage[userID]
	u.UserID, u.Day, u.DayTokens = userID, day, db.days[userID][day]
	if err := fn(&u); err != nil {
		return err
	}
	if _, ok := db.usage[userID]; !ok {
		db.accounts[userID] = time.Unix(max(u.Minute, u.SearchMinute)*60, 0).UTC() // as Firestore's first quota document
	}
	db.usage[userID] = u
	return nil
}

func (db *DB) AddTokens(_ context.Context, userID, day string, n int) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.addTokensLocked(userID, day, n)
	return nil
}

// ChargeAfter adds n to the user's spend on day if they have one.
func (db *DB) ChargeAfter(_ context.Context, userID, day string, n int) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.days[userID][day]; !ok {
		return errs.Errorf(errs.ENOTFOUND, "no spend on %s", day)
	}
	db.addTokensLocked(userID, day, n)
	return nil
}

// ChargeMemory adds n to the user's spend on day if they have long-term
// memory.
func (db *DB) ChargeMemory(_ context.Context, userID, day string, n int) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.users[userID]; !ok {
		return errs.Errorf(errs.ENOTFOUND, "no long-term memory")
	}
	db.addTokensLocked(userID, day, n)
	return nil
}

func (db *DB) addTokensLocked(userID, day string, n int) {
	if db.days[userID] == nil {
		db.days[userID] = map[string]int{}
	}
	db.days[userID][day] += n
}

func (db *DB) GetUsage(_ context.Context, userID string) (*chat.UsageRecord, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	u, ok := db.usage[userID]
	if !ok && len(db.days[userID]) == 0 && len(db.slots[userID]) == 0 {
		return nil, nil
	}
	r := &chat.UsageRecord{Minute: u.Minute, MinuteMessages: u.MinuteMessages, SearchMinute: u.SearchMinute, MinuteSearches: u.MinuteSearches, Days: map[string]int{},
		TurnMinutes: append([]int64(nil), db.slots[userID]...)}
	for d, n := range db.days[userID] {
		r.Days[d] = n
	}
	return r, nil
}

func (db *DB) DeleteUsage(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.deleteUsageLocked(userID), nil
}

func (db *DB) deleteUsageLocked(userID string) int {
	n := len(db.days[userID]) + len(db.slots[userID])
	if _, ok := db.usage[userID]; ok {
		n++
	}
	delete(db.usage, userID)
	delete(db.days, userID)
	for key := range db.models { // "uid day": their replies' tokens by model go with the days
		if strings.HasPrefix(key, userID+" ") {
			delete(db.models, key)
		}
	}
	delete(db.slots, userID)
	return n
}

// UsageOn returns the user's per-minute message quota, their spend on day and
// their first slots turn slots.
func (db *DB) UsageOn(_ context.Context, userID, day string, slots int) (*chat.UsageRecord, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	u := db.usage[userID]
	r := &chat.UsageRecord{Minute: u.Minute, MinuteMessages: u.MinuteMessages, SearchMinute: u.SearchMinute, MinuteSearches: u.MinuteSearches, Days: map[string]int{day: db.days[userID][day]},
		Models: map[string]int{}, Bill: maps.Clone(db.models[userID+" "+day]),
		TurnMinutes: make([]int64, slots)}
	for m, t := range r.Bill {
		r.Models[m] = t.Total()
	}
	copy(r.TurnMinutes, db.slots[userID])
	return r, nil
}
