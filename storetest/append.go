package storetest

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Append is Append with e's history service.
func (e *Env) Append(ctx context.Context, s *sessions.Session, key string, drafts ...history.Draft) ([]history.Message, error) {
	return Append(ctx, e.History, s, key, drafts...)
}

// Append stores drafts as the next messages of s, atomically and in
// order, as hs plans them and its store commits them: how tests and the
// contract suite write a session's history.
// (Apps append through chat.Service.Append, which adds the memory path's
// version check, limits and summaries.) With a key, a retry returns the
// batch stored the first time and writes nothing; the same key with
// other messages is ECONFLICT.
func Append(ctx context.Context, hs *history.Service, s *sessions.Session, key string, drafts ...history.Draft) ([]history.Message, error) {
	plan, err := hs.Prepare(s, key, drafts...)
	if err != nil {
		return nil, err
	}
	a, err := hs.Store.Append(ctx, s.ID, key, plan)
	if err != nil {
		return nil, err
	}
	return a.Messages, nil
}
