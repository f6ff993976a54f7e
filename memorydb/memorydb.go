// Package memorydb keeps sessions and messages in process memory, for local
// runs without emulators and for fast tests. It implements the same storage
// interfaces as firestoredb and passes the same contract suite.
package memorydb

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// DB is an in-memory store. One mutex makes every operation atomic.
type DB struct {
	mu       sync.Mutex
	sessions map[string]*sessions.Session
	messages map[string][]history.Message // by session; index == seq
	keys     map[string]map[string][]int  // session → clientMessageId → seqs
	usage    map[string]chat.Usage        // by user: the appended-messages window
	days     map[string]map[string]int    // by user, then UTC day: tokens spent
	slots    map[string][]int64           // by user: the minute each turn slot was taken in
	replies  map[string]map[string]int    // session → turn key → seq of the reply
	drafts   map[string]*draft            // by session: its streaming reply
	tails    map[string]*history.Tail     // by session
	compact  map[string][]history.Compaction
	users    map[string]longterm.User
	facts    map[string]map[string]longterm.Fact // superseded, by user, then id
	draftSeq int64
	backlog  struct {
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
		slots:    map[string][]int64{},
		replies:  map[string]map[string]int{},
		drafts:   map[string]*draft{},
		tails:    map[string]*history.Tail{},
		compact:  map[string][]history.Compaction{},
		users:    map[string]longterm.User{},
		facts:    map[string]map[string]longterm.Fact{},
	}
}

// Ping always succeeds: memory is always there.
func (db *DB) Ping(context.Context) error { return nil }

func (db *DB) CreateSession(_ context.Context, s *sessions.Session) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.sessions[s.ID]; ok {
		return sessions.Errorf(sessions.ECONFLICT, "session %q already exists", s.ID)
	}
	db.sessions[s.ID] = s.Clone()
	return nil
}

func (db *DB) GetSession(_ context.Context, id string) (*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[id]
	if !ok {
		return nil, sessions.NotFound(id)
	}
	return s.Clone(), nil
}

func (db *DB) UpdateSession(_ context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[id]
	if !ok {
		return nil, sessions.NotFound(id)
	}
	c := s.Clone()
	if err := fn(c); err != nil {
		return nil, err
	}
	db.sessions[id] = c
	return c.Clone(), nil
}

func (db *DB) ListSessions(_ context.Context, q sessions.ListQuery) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for _, s := range db.sessions {
		if s.UserID == q.UserID && s.Status == q.Status && (q.After == nil || before(s, q.After)) {
			out = append(out, s.Clone())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return before(out[j], &sessions.Cursor{UpdatedAt: out[i].UpdatedAt, ID: out[i].ID})
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// before reports whether s comes after cursor c in the list order
// (UpdatedAt descending, then ID descending).
func before(s *sessions.Session, c *sessions.Cursor) bool {
	if !s.UpdatedAt.Equal(c.UpdatedAt) {
		return s.UpdatedAt.Before(c.UpdatedAt)
	}
	return s.ID < c.ID
}

func (db *DB) PurgeSession(ctx context.Context, id string, check func(*sessions.Session) error, forget sessions.Forget) (int, error) {
	db.mu.Lock()
	s, ok := db.sessions[id]
	if !ok {
		db.mu.Unlock()
		return 0, sessions.NotFound(id)
	}
	if err := check(s.Clone()); err != nil {
		db.mu.Unlock()
		return 0, err
	}
	n := db.purgeLocked(id)
	db.mu.Unlock()
	if forget != nil { // outside the lock: it uses this store
		return n, forget(ctx, s.UserID, id)
	}
	return n, nil
}

// purgeLocked removes a session and all under it; db.mu is held.
func (db *DB) purgeLocked(id string) int {
	n := 1 + len(db.messages[id]) + len(db.compact[id])
	if _, ok := db.tails[id]; ok {
		n++
	}
	delete(db.sessions, id)
	delete(db.messages, id)
	delete(db.keys, id)
	delete(db.replies, id)
	delete(db.drafts, id)
	delete(db.tails, id)
	delete(db.compact, id)
	return n
}

func (db *DB) Append(_ context.Context, sessionID, key string, plan history.Plan) (*history.Appended, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return nil, sessions.NotFound(sessionID)
	}
	var stored []history.Message
	if key != "" {
		stored = db.batch(sessionID, key)
	}
	c, t := s.Clone(), db.tail(sessionID)
	write, err := plan(c, t, stored)
	if err != nil {
		return nil, err
	}
	if len(write) == 0 {
		return &history.Appended{Session: s.Clone(), Tail: db.tail(sessionID), Messages: stored, Replayed: true}, nil
	}
	out := make([]history.Message, len(write))
	for i, m := range write {
		if m.Seq != len(db.messages[sessionID])+i {
			return nil, sessions.Errorf(sessions.EINTERNAL, "memorydb: seq %d out of order", m.Seq)
		}
		if key != "" {
			m.ID = history.KeyDocID(key, i)
		} else {
			m.ID = sessions.NewID()
		}
		out[i] = m
	}
	t.SetIDs(out)
	for _, m := range out {
		db.messages[sessionID] = append(db.messages[sessionID], cloneMessage(m))
		if key != "" {
			if db.keys[sessionID] == nil {
				db.keys[sessionID] = map[string][]int{}
			}
			db.keys[sessionID][key] = append(db.keys[sessionID][key], m.Seq)
		}
	}
	db.sessions[sessionID] = c
	db.tails[sessionID] = cloneTail(t)
	return &history.Appended{Session: c.Clone(), Tail: cloneTail(t), Messages: out}, nil
}

// tail returns a copy of a session's tail (empty if none); db.mu is held.
func (db *DB) tail(sessionID string) *history.Tail {
	if t, ok := db.tails[sessionID]; ok {
		return cloneTail(t)
	}
	return &history.Tail{}
}

func cloneTail(t *history.Tail) *history.Tail {
	c := *t
	c.Messages = make([]history.Message, len(t.Messages))
	for i, m := range t.Messages {
		c.Messages[i] = cloneMessage(m)
	}
	if t.Compaction != nil {
		cp := *t.Compaction
		c.Compaction = &cp
	}
	return &c
}

func (db *DB) ReadContext(_ context.Context, sessionID string) (*sessions.Session, *history.Tail, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return nil, nil, sessions.NotFound(sessionID)
	}
	return s.Clone(), db.tail(sessionID), nil
}

func (db *DB) UpdateTail(_ context.Context, sessionID string, fn func(*sessions.Session, *history.Tail) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return sessions.NotFound(sessionID)
	}
	sc, t := s.Clone(), db.tail(sessionID)
	if err := fn(sc, t); err != nil {
		return err
	}
	db.sessions[sessionID] = sc
	db.tails[sessionID] = t
	return nil
}

func (db *DB) SaveCompaction(_ context.Context, sessionID string, c *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[sessionID]
	if !ok {
		return sessions.NotFound(sessionID)
	}
	for _, old := range db.compact[sessionID] {
		if old.ID == c.ID {
			return sessions.Errorf(sessions.ECONFLICT, "compaction %s exists", c.ID)
		}
	}
	sc, t := s.Clone(), db.tail(sessionID)
	if err := fn(sc, t); err != nil {
		return err
	}
	db.compact[sessionID] = append(db.compact[sessionID], *c)
	db.sessions[sessionID] = sc
	db.tails[sessionID] = t
	return nil
}

func (db *DB) ListCompactions(_ context.Context, sessionID string) ([]history.Compaction, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := append([]history.Compaction(nil), db.compact[sessionID]...)
	sort.Slice(out, func(i, j int) bool { return out[i].EndSeq < out[j].EndSeq })
	return out, nil
}

func (db *DB) ListMessages(_ context.Context, q history.ListQuery) ([]history.Message, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	all := db.messages[q.SessionID]
	lo, hi := 0, len(all)-1 // the seqs q may return
	if q.Within != nil {
		lo, hi = max(lo, q.Within.From), min(hi, q.Within.To)
	}
	var out []history.Message
	if q.Desc {
		start := hi
		if q.AfterSeq != nil && *q.AfterSeq-1 < start {
			start = *q.AfterSeq - 1
		}
		for i := start; i >= lo && len(out) < q.Limit; i-- {
			out = append(out, cloneMessage(all[i]))
		}
		return out, nil
	}
	start := lo
	if q.AfterSeq != nil {
		start = max(start, *q.AfterSeq+1)
	}
	for i := start; i <= hi && len(out) < q.Limit; i++ {
		out = append(out, cloneMessage(all[i]))
	}
	return out, nil
}

func (db *DB) MessageRange(_ context.Context, sessionID string, from, to int) ([]history.Message, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	all := db.messages[sessionID]
	var out []history.Message
	for i := from; i <= to && i < len(all); i++ {
		out = append(out, cloneMessage(all[i]))
	}
	return out, nil
}

// batch returns copies of the messages stored under key; db.mu is held.
func (db *DB) batch(sessionID, key string) []history.Message {
	var stored []history.Message
	for _, q := range db.keys[sessionID][key] {
		stored = append(stored, cloneMessage(db.messages[sessionID][q]))
	}
	return stored
}

func cloneMessage(m history.Message) history.Message {
	m.ToolCalls = append([]history.ToolCall(nil), m.ToolCalls...)
	m.Metadata.Sources = append([]string(nil), m.Metadata.Sources...)
	m.Metadata.ToolsUsed = append([]string(nil), m.Metadata.ToolsUsed...)
	return m
}

func (db *DB) UpdateUsage(_ context.Context, userID, day string, fn func(*chat.Usage) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	u := db.usage[userID]
	u.UserID, u.Day, u.DayTokens = userID, day, db.days[userID][day]
	if err := fn(&u); err != nil {
		return err
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

func (db *DB) addTokensLocked(userID, day string, n int) {
	if db.days[userID] == nil {
		db.days[userID] = map[string]int{}
	}
	db.days[userID][day] += n
}

// draft is a session's streaming reply, as its followers see it.
type draft struct {
	userID, replyID, text string
	stop                  bool
	version               int64
}

// SaveDraft stores d's text if the session's draft still follows d's reply.
func (db *DB) SaveDraft(_ context.Context, d *chat.Draft) (bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	cur, ok := db.drafts[d.SessionID]
	if !ok || cur.replyID != d.ReplyID {
		return false, chat.ErrDraftTaken
	}
	if cur.stop {
		return true, nil
	}
	db.draftSeq++
	cur.text, cur.version = d.Text, db.draftSeq
	d.Version = cur.version
	return false, nil
}

// RequestStop marks the session's draft to stop if it follows replyID.
func (db *DB) RequestStop(_ context.Context, userID, sessionID, replyID string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	cur, ok := db.drafts[sessionID]
	if !ok || cur.userID != userID || cur.replyID != replyID {
		return sessions.Errorf(sessions.ENOTFOUND, "no reply %s is in progress", replyID)
	}
	cur.stop = true
	db.draftSeq++
	cur.version = db.draftSeq
	return nil
}

// RunTurn reads, plans and writes under the store's one lock, so nothing
// can change in between and prev is not needed.
func (db *DB) RunTurn(_ context.Context, q chat.TurnQuery, _ *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	st := &chat.TurnState{Tail: db.tail(q.SessionID), DayTokens: db.days[q.UserID][q.Day]}
	if s, ok := db.sessions[q.SessionID]; ok {
		st.Session = s.Clone()
	}
	if q.AskedID != "" {
		for _, m := range db.messages[q.SessionID] {
			if m.ID == q.AskedID {
				m = cloneMessage(m)
				st.Asked = &m
			}
		}
	}
	if q.Key != "" {
		if b := db.batch(q.SessionID, q.Key); len(b) > 0 && q.AskedID == "" {
			st.Asked = &b[0]
		}
		if seq, ok := db.replies[q.SessionID][q.Key]; ok {
			m := cloneMessage(db.messages[q.SessionID][seq])
			st.Answer = &m
		}
	}
	if q.AskedKey != "" {
		_, st.AskedAnswered = db.replies[q.SessionID][q.AskedKey]
	}
	st.Slots = make([]int64, min(q.Slots, chat.MaxTurnsPerMinute))
	copy(st.Slots, db.slots[q.UserID])
	if u, ok := db.users[q.UserID]; q.Memory && ok && !u.Disabled {
		st.Memory = chat.MemoryBlock{Text: u.Block, Tokens: u.BlockTokens}
	}
	if d, ok := db.drafts[q.SessionID]; q.Draft && ok {
		st.DraftReplyID, st.DraftVersion = d.replyID, d.version
	}
	w, err := plan(st)
	if err != nil || w == nil {
		return st, err
	}
	if w.Session != nil {
		if st.Session == nil {
			if _, ok := db.sessions[w.Session.ID]; ok {
				return nil, sessions.Errorf(sessions.EINTERNAL, "memorydb: session %q exists", w.Session.ID)
			}
		}
		db.sessions[q.SessionID] = w.Session.Clone()
	}
	for i, m := range w.Messages {
		if m.Seq != len(db.messages[q.SessionID]) {
			return nil, sessions.Errorf(sessions.EINTERNAL, "memorydb: seq %d out of order", m.Seq)
		}
		db.messages[q.SessionID] = append(db.messages[q.SessionID], cloneMessage(m))
		switch {
		case m.ClientMessageID != "":
			if db.keys[q.SessionID] == nil {
				db.keys[q.SessionID] = map[string][]int{}
			}
			db.keys[q.SessionID][m.ClientMessageID] = []int{m.Seq}
			st.Asked = &w.Messages[i]
		case q.Key != "" && m.ID == history.ReplyDocID(q.Key):
			if db.replies[q.SessionID] == nil {
				db.replies[q.SessionID] = map[string]int{}
			}
			db.replies[q.SessionID][q.Key] = m.Seq
			st.Answer = &w.Messages[i]
		}
	}
	if w.Tail != nil {
		db.tails[q.SessionID] = cloneTail(w.Tail)
		st.Tail = cloneTail(w.Tail)
	}
	if w.Lease != nil && st.Asked != nil {
		seq := st.Asked.Seq
		if q.AskedID != "" {
			db.messages[q.SessionID][seq].RegenerateBy = *w.Lease
		} else {
			db.messages[q.SessionID][seq].ReplyBy = *w.Lease
		}
		a := cloneMessage(db.messages[q.SessionID][seq])
		st.Asked = &a
	}
	if w.Slot >= 0 {
		slots := db.slots[q.UserID]
		for len(slots) <= w.Slot {
			slots = append(slots, 0)
		}
		slots[w.Slot] = w.Minute
		db.slots[q.UserID] = slots
		st.Slots[w.Slot] = w.Minute
	}
	if w.Tokens > 0 {
		db.addTokensLocked(q.UserID, q.Day, w.Tokens)
		st.DayTokens += w.Tokens
	}
	if d := w.Draft; d != nil {
		switch cur := db.drafts[q.SessionID]; {
		case d.Create:
			db.draftSeq++
			db.drafts[q.SessionID] = &draft{userID: q.UserID, replyID: d.ReplyID, version: db.draftSeq}
			st.DraftReplyID, st.DraftVersion = d.ReplyID, db.draftSeq
		case cur != nil && cur.replyID == d.ReplyID:
			delete(db.drafts, q.SessionID)
			st.DraftReplyID, st.DraftVersion = "", nil
		}
	}
	if s, ok := db.sessions[q.SessionID]; ok {
		st.Session = s.Clone()
	}
	return st, nil
}

func (db *DB) ExpiredSessions(_ context.Context, st sessions.Status, now time.Time, after *retention.Cursor, limit int) ([]*sessions.Session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []*sessions.Session
	for _, s := range db.sessions {
		if s.Status != st || s.ExpiresAt.After(now) {
			continue
		}
		if after != nil && (s.ExpiresAt.Before(after.ExpiresAt) || (s.ExpiresAt.Equal(after.ExpiresAt) && s.ID <= after.ID)) {
			continue
		}
		out = append(out, s.Clone())
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ExpiresAt.Equal(out[j].ExpiresAt) {
			return out[i].ExpiresAt.Before(out[j].ExpiresAt)
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// CountExpired counts what ExpiredSessions would list.
func (db *DB) CountExpired(ctx context.Context, st sessions.Status, now time.Time) (int, error) {
	all, err := db.ExpiredSessions(ctx, st, now, nil, math.MaxInt)
	return len(all), err
}

// PurgeSessions purges each session in turn.
func (db *DB) PurgeSessions(ctx context.Context, ids []string, check func(*sessions.Session) error, forget sessions.Forget) []retention.Purged {
	out := make([]retention.Purged, len(ids))
	for i, id := range ids {
		n, err := db.PurgeSession(ctx, id, check, forget)
		out[i] = retention.Purged{SessionID: id, Documents: n, Err: err}
	}
	return out
}

// PendingPurges is always empty: a purge here is one atomic step.
func (db *DB) PendingPurges(context.Context, string, int) ([]string, error) { return nil, nil }

// CountPendingPurges is always 0.
func (db *DB) CountPendingPurges(context.Context) (int, error) { return 0, nil }

// ResumePurges has nothing to finish.
func (db *DB) ResumePurges(context.Context, []string, sessions.Forget) []retention.Purged { return nil }

// LastBacklog returns what SaveBacklog recorded.
func (db *DB) LastBacklog(context.Context) (int, time.Time, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.backlog.n, db.backlog.at, db.backlog.ok, nil
}

// SaveBacklog records a sweep's backlog.
func (db *DB) SaveBacklog(_ context.Context, n int, at time.Time) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.backlog.n, db.backlog.at, db.backlog.ok = n, at, true
	return nil
}

// DeleteUserDocuments deletes whatever still belongs to userID.
func (db *DB) DeleteUserDocuments(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := 0
	for id, s := range db.sessions {
		if s.UserID == userID {
			n += db.purgeLocked(id)
		}
	}
	if _, ok := db.usage[userID]; ok {
		delete(db.usage, userID)
		n++
	}
	return n + db.eraseMemoryLocked(userID), nil
}

func (db *DB) GetUsage(_ context.Context, userID string) (*chat.UsageRecord, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	u, ok := db.usage[userID]
	if !ok && len(db.days[userID]) == 0 && len(db.slots[userID]) == 0 {
		return nil, nil
	}
	r := &chat.UsageRecord{Minute: u.Minute, MinuteMessages: u.MinuteMessages, Days: map[string]int{},
		TurnMinutes: append([]int64(nil), db.slots[userID]...)}
	for d, n := range db.days[userID] {
		r.Days[d] = n
	}
	return r, nil
}

func (db *DB) DeleteUsage(_ context.Context, userID string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := len(db.days[userID]) + len(db.slots[userID])
	if _, ok := db.usage[userID]; ok {
		n++
	}
	delete(db.usage, userID)
	delete(db.days, userID)
	delete(db.slots, userID)
	return n, nil
}

func (db *DB) GetUser(_ context.Context, userID string) (*longterm.User, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	u, ok := db.users[userID]
	if !ok {
		return &longterm.User{UserID: userID}, nil
	}
	u.Facts = append([]longterm.Fact(nil), u.Facts...)
	return &u, nil
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
		return sessions.Errorf(sessions.ECONFLICT, "memory changed meanwhile")
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
	saved.UserID, saved.Version = userID, version+1
	saved.Facts = append([]longterm.Fact(nil), u.Facts...)
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
