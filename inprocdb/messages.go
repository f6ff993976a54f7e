package inprocdb

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/sessions"
)

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
			return nil, errs.Errorf(errs.EINTERNAL, "inprocdb: seq %d out of order", m.Seq)
		}
		if key != "" {
			m.ID = history.KeyedMessageID(key, i)
		} else {
			m.ID = ids.New()
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
			if all[i].ID != "" { // not trimmed
				out = append(out, cloneMessage(all[i]))
			}
		}
		return out, nil
	}
	start := lo
	if q.AfterSeq != nil {
		start = max(start, *q.AfterSeq+1)
	}
	for i := start; i <= hi && len(out) < q.Limit; i++ {
		if all[i].ID != "" {
			out = append(out, cloneMessage(all[i]))
		}
	}
	return out, nil
}

func (db *DB) MessageRange(_ context.Context, sessionID string, from, to int) ([]history.Message, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	all := db.messages[sessionID]
	var out []history.Message
	for i := max(from, 0); i <= to && i < len(all); i++ {
		if all[i].ID != "" {
			out = append(out, cloneMessage(all[i]))
		}
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
	m.Attachments = append([]history.Part(nil), m.Attachments...)
	m.Metadata.Sources = append([]string(nil), m.Metadata.Sources...)
	m.Metadata.ToolsUsed = append([]string(nil), m.Metadata.ToolsUsed...)
	if m.Feedback != nil {
		f := *m.Feedback
		m.Feedback = &f
	}
	return m
}
