package inprocdb

import (
	"context"
	"sort"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
)

func (db *DB) GetUser(_ context.Context, userID string) (*longterm.User, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	u, ok := db.users[userID]
	if !ok {
		return &longterm.User{UserID: userID}, nil
	}
	u.Facts = append([]longterm.Fact(nil), u.Facts...)
	u.History = u.History.Clone()
	u.Filed = len(db.facts[userID]) > 0
	return &u, nil
}

func (db *DB) LiveFacts(_ context.Context, userID string) ([]longterm.Fact, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return append([]longterm.Fact(nil), db.users[userID].Facts...), nil
}

func (db *DB) ListSuperseded(_ context.Context, userID string) ([]longterm.Fact, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []longterm.Fact
	for _, f := range db.facts[userID] {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (db *DB) SaveMemory(_ context.Context, userID string, version int64, u *longterm.User, c longterm.Change) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, id := range c.Sources {
		if s, ok := db.sessions[id]; !ok || s.UserID != userID {
			return longterm.ErrSourceGone
		}
	}
	if db.users[userID].Version != version {
		return errs.Errorf(errs.ECONFLICT, "memory changed meanwhile")
	}
	if _, ok := db.users[userID]; !ok {
		db.accounts[userID] = u.UpdatedAt // as Firestore's commit that starts the memory
	}
	if db.facts[userID] == nil {
		db.facts[userID] = map[string]longterm.Fact{}
	}
	for _, f := range c.File {
		db.facts[userID][f.ID] = f
	}
	for _, id := range c.Drop {
		delete(db.facts[userID], id)
	}
	saved := *u
	saved.UserID, saved.Version, saved.Partial = userID, version+1, false
	saved.Facts = append([]longterm.Fact(nil), u.Facts...)
	if c.KeepFacts { // the live facts stay as stored, as Firestore's facts document does
		saved.Facts = db.users[userID].Facts
	}
	saved.History = u.History.Clone()
	db.users[userID] = saved
	return nil
}

func (db *DB) EraseMemory(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.eraseMemoryLocked(userID), nil
}

func (db *DB) eraseMemoryLocked(userID string) int {
	n := len(db.facts[userID])
	if _, ok := db.users[userID]; ok {
		n++
	}
	delete(db.facts, userID)
	delete(db.users, userID)
	return n
}
