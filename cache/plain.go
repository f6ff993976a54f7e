package cache

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// plain is Known for a store that offers none of it: each operation runs
// as the store's plain counterpart runs it, and names no version (so the
// cache keeps nothing of it).
type plain struct{ Source }

func (p plain) ClaimKnown(context.Context, chat.TurnQuery, *chat.TurnState, func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, bool) {
	return nil, false
}

func (p plain) ReadKnown(ctx context.Context, q chat.TurnQuery, _ *chat.TurnState) (*chat.TurnState, error) {
	return p.ReadTurn(ctx, q)
}

func (p plain) AppendKnown(ctx context.Context, q chat.AppendQuery, _ *chat.TurnState, _ chat.Version, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (*chat.TurnState, chat.Version, error) {
	v, err := p.RunAppend(ctx, q, plan)
	if err != nil {
		return nil, nil, err
	}
	return &chat.TurnState{ContextVersion: v}, nil, nil
}

func (p plain) CreateKnown(ctx context.Context, s *sessions.Session) (*chat.TurnState, error) {
	return nil, p.CreateSession(ctx, s)
}
