// Package inprocdb is the in-process store: every storage interface the
// domain packages declare, kept in the process behind one mutex, for local runs
// without emulators and for fast tests. Its files match firestoredb's, one
// for each store behaviour, and both pass the contract suite (storetest).
package inprocdb

import (
	"context"
	"sync"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// DB is the in-process store. One mutex makes every operation atomic.
type DB struct {
	mu       sync.Mutex
	sessions map[string]*sessions.Session
	messages map[string][]history.Message           // by session; index == seq
	keys     map[string]map[string][]int            // session → clientMessageId → seqs
	usage    map[string]chat.Usage                  // by user: the per-minute message quota
	days     map[string]map[string]int              // by user, then UTC day: tokens spent
	models   map[string]map[string]chat.ModelTokens // by user and day ("uid day"), then model: replies' tokens
	slots    map[string][]int64                     // by user: the minute each turn slot was taken in
	replies  map[string]map[string]int              // session → id of a turn's reply → its seq
	drafts   map[string]*draft                      // by session: its streaming reply
	tails    map[string]*history.Tail               // by session
	compact  map[string][]history.Compaction
	users    map[string]longterm.User
	facts    map[string]map[string]longterm.Fact // superseded, by user, then id
	recall   map[string]map[string]recall.Unit   // session → reply id → its exchange
	accounts map[string]time.Time                // by user who holds data: when last seen alive
	attach   *files                              // attachments' records and quotas (attachments.go)
	jobs     map[string]map[string]chat.Job      // session → reply id → its after-turn job
	draftSeq int64
	// rollUpMark is when the last complete roll-up of histories started.
	rollUpMark time.Time
	backlog    struct {
		n  int
		at time.Time
		ok bool
	}
}

// New returns an empty store.
func New() *DB {
	return &DB{
		sessions: map[string]*sessions.Session{},
		messages: map[string][]history.Message{},
		keys:     map[string]map[string][]int{},
		usage:    map[string]chat.Usage{},
		days:     map[string]map[string]int{},
		models:   map[string]map[string]chat.ModelTokens{},
		slots:    map[string][]int64{},
		replies:  map[string]map[string]int{},
		drafts:   map[string]*draft{},
		tails:    map[string]*history.Tail{},
		compact:  map[string][]history.Compaction{},
		users:    map[string]longterm.User{},
		facts:    map[string]map[string]longterm.Fact{},
		recall:   map[string]map[string]recall.Unit{},
		accounts: map[string]time.Time{},
		jobs:     map[string]map[string]chat.Job{},
	}
}

// Ping always succeeds: the store is the process itself.
func (db *DB) Ping(context.Context) error { return nil }
