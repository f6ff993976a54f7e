package inprocdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/sessions"
)

// RunAppend reads, plans and writes under the store's one lock.
func (db *DB) RunAppend(_ context.Context, q chat.AppendQuery, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	s, ok := db.sessions[q.SessionID]
	if !ok {
		return "", sessions.NotFound(q.SessionID)
	}
	u := db.usage[q.UserID]
	u.UserID, u.Day, u.DayTokens = q.UserID, q.Day, db.days[q.UserID][q.Day]
	st := &chat.AppendState{Session: s.Clone(), Tail: db.tail(q.SessionID), Usage: u}
	st.Version = contextVersion(st.Session, st.Tail)
	if q.Key != "" {
		st.Stored = db.batch(q.SessionID, q.Key)
	}
	w, err := plan(st)
	if err != nil || w == nil {
		return st.Version, err
	}
	for i := range w.Messages {
		m := &w.Messages[i]
		if m.Seq != len(db.messages[q.SessionID]) {
			return "", errs.Errorf(errs.EINTERNAL, "inprocdb: seq %d out of order", m.Seq)
		}
		if m.ID == "" {
			m.ID = ids.New()
		}
		db.messages[q.SessionID] = append(db.messages[q.SessionID], cloneMessage(*m))
		if q.Key != "" {
			if db.keys[q.SessionID] == nil {
				db.keys[q.SessionID] = map[string][]int{}
			}
			db.keys[q.SessionID][q.Key] = append(db.keys[q.SessionID][q.Key], m.Seq)
		}
	}
	w.Tail.SetIDs(w.Messages)
	db.sessions[q.SessionID] = w.Session.Clone()
	db.tails[q.SessionID] = cloneTail(w.Tail)
	db.usage[q.UserID] = w.Quota
	db.addTokensLocked(q.UserID, q.Day, w.Tokens)
	return contextVersion(w.Session, w.Tail), nil
}

// contextVersion names a session and its tail by their content: any
// change to either changes it.
func contextVersion(s *sessions.Session, t *history.Tail) string {
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(t)
	h := sha256.New()
	h.Write(a)
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:12])
}
