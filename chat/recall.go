package chat

import (
	"context"
	"sync"

	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// Recaller finds a user's earlier units relevant to a message (see
// sessions.ContextSettings.Recall), in two steps so that the first can
// start before the session is read: recall.Service.
type Recaller interface {
	// EmbedQuery embeds a turn's message.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
	// Recall returns up to k units of s's user nearest to v, in s or
	// in the sessions scope says; the message's text is looked for by its
	// words beside its embedding.
	Recall(ctx context.Context, s *sessions.Session, text string, v []float32, scope recall.Scope, k int) ([]recall.Unit, error)
}

// others is what st read of the user's other sessions (which are
// deleted, and which of each one's messages are off its active branch),
// for a recall from all of them; nil if it read nothing of them.
func others(st *TurnState) *recall.Visibility {
	if st.Deleted == nil {
		return nil
	}
	return &recall.Visibility{Deleted: st.Deleted, OffPath: st.OffPath}
}

// startEmbeds begins what a turn of s embeds its message for (once): the
// recall if s asks for it, the choice of long-term facts by relevance if
// the user's block leaves some out (choose). o is what the turn read of
// the user's other sessions, if it did.
func (svc *Service) startEmbeds(ctx context.Context, r *recaller, s *sessions.Session, query string, choose bool, o *recall.Visibility) {
	mode := s.Context.Recall
	recalls := mode != "" && mode != sessions.RecallOff
	if svc.Recaller == nil || query == "" {
		return
	}
	svc.setHint(s.ID, Hint{Embed: recalls || choose, All: mode == sessions.RecallAll})
	if !recalls && !choose {
		return
	}
	svc.embed(ctx, r, query)
	if !recalls {
		return
	}
	r.recallOnce.Do(func() {
		r.done = make(chan struct{})
		r.k, r.limit = s.Context.RecallLimits()
		go svc.recallFor(ctx, r, s.Clone(), query, recall.Scope{All: mode == sessions.RecallAll, Known: o})
	})
}

// recallFor finds what r adds for s's message once its embedding is done,
// and then closes r.done.
func (svc *Service) recallFor(ctx context.Context, r *recaller, s *sessions.Session, query string, scope recall.Scope) {
	defer close(r.done)
	if <-r.embedded; r.embedErr != nil {
		r.err = r.embedErr
		return
	}
	r.got, r.err = svc.Recaller.Recall(ctx, s, query, r.vector, scope, r.k)
}

// recaller runs a turn's recall beside its reads and its claim: the query
// embedding starts once (at the turn's start when this instance has seen
// the session recall before, else once the claim is planned), the vector
// query once the claim is planned; block waits and returns what to add.
type recaller struct {
	embedOnce, recallOnce sync.Once
	embedded              chan struct{}
	vector                []float32
	embedErr              error
	done                  chan struct{}
	k, limit              int // the session's recall limits (RecallLimits), as the recall started
	got                   []recall.Unit
	err                   error
}

// embed starts the query embedding, once.
func (svc *Service) embed(ctx context.Context, r *recaller, query string) {
	r.embedOnce.Do(func() {
		r.embedded = make(chan struct{})
		go svc.embedQuery(ctx, r, query)
	})
}

// embedQuery embeds query for r, and then closes r.embedded.
func (svc *Service) embedQuery(ctx context.Context, r *recaller, query string) {
	defer close(r.embedded)
	r.vector, r.embedErr = svc.Recaller.EmbedQuery(ctx, query)
}

// Hint is what a session's last turn on this instance did: whether it
// embedded its message (to recall, or to choose long-term facts by
// relevance), and whether it recalled from all of the user's sessions. A
// turn of a session with a hint embeds its message beside its first read
// instead of after it, and reads the user's deleted sessions in it, so
// that its recall needs no read of its own.
type Hint struct{ Embed, All bool }

// Hints keep a Hint per session on this instance: what a store in front
// of the turn's store keeps of recent sessions (package cache) may offer
// it. Without it, a turn embeds after its read.
type Hints interface {
	Hint(sessionID string) Hint
	SetHint(sessionID string, h Hint)
}

// hint is the session's hint, if the turn's store keeps them.
func (svc *Service) hint(sessionID string) Hint {
	if h, ok := svc.Turns.(Hints); ok {
		return h.Hint(sessionID)
	}
	return Hint{}
}

// setHint keeps the session's hint, if the turn's store keeps them.
func (svc *Service) setHint(sessionID string, x Hint) {
	if h, ok := svc.Turns.(Hints); ok {
		h.SetHint(sessionID, x)
	}
}

// wait waits for the query embedding, if one started.
func (r *recaller) wait() {
	if r.embedded != nil {
		<-r.embedded
	}
}
