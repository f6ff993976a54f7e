package chat

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/chatmemory/backend/history"
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
	k, _ := s.Context.RecallLimits()
	r.got, r.err = svc.Recaller.Recall(ctx, s, query, r.vector, scope, k)
}

// recallHeader opens the recalled excerpts, so that the model knows what
// they are.
const recallHeader = "Excerpts recalled from the user's earlier conversations (by relevance to the current message; they may be out of date):"

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

// recallBlock returns the excerpts to add to the turn's system messages,
// with their tokens: those not in the context already, each clipped to its
// share of the session's cap, counted, and kept while the cap holds. A
// recall that failed adds nothing (and is logged).
func (svc *Service) recallBlock(ctx context.Context, r *recaller, s *sessions.Session, c *history.Context) (string, int) {
	if r.done == nil {
		return "", 0
	}
	<-r.done
	if r.err != nil {
		svc.logError(ctx, "recall failed; the turn goes on without it", s.ID, r.err)
		return "", 0
	}
	in := map[string]bool{}
	for _, m := range c.Messages {
		in[m.ID] = true
	}
	k, limit := s.Context.RecallLimits()
	count := func(text string) int { // as a message of its own: over-counts the joins
		return svc.History.Tokens.Count(s.Model, &history.Message{Role: history.RoleSystem, Content: text})
	}
	tokens := count(recallHeader)
	chars := 4 * limit / k // about a share of the cap, in characters
	var b strings.Builder
	for _, x := range r.got {
		if x.SessionID == s.ID && (in[x.Question.ID] || in[x.Reply.ID]) {
			continue
		}
		title := x.SessionTitle
		if x.SessionID == s.ID {
			title = "this conversation"
		}
		text := recalledText(x, title, chars)
		if n := count(text); tokens+n <= limit {
			tokens += n
			b.WriteString(text)
		}
	}
	if b.Len() == 0 {
		return "", 0
	}
	return recallHeader + b.String(), tokens
}

// recalledText is one recalled unit as the model reads it: its date (its
// reply's, else its question's), its session's title, and the start of
// its messages in about chars runes (a question a third of them when a
// reply follows). A message with no partner shows alone.
func recalledText(x recall.Unit, title string, chars int) string {
	at := x.Reply.CreatedAt
	if x.Reply.ID == "" {
		at = x.Question.CreatedAt
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n[%s, %q]", at.UTC().Format("2006-01-02"), title)
	left := chars
	if x.Question.ID != "" {
		share := chars
		if x.Reply.ID != "" {
			share = chars / 3
		}
		q := clipExcerpt(x.Question, share)
		fmt.Fprintf(&b, "\nuser: %s", q)
		left -= utf8.RuneCountInString(q)
	}
	if x.Reply.ID != "" {
		fmt.Fprintf(&b, "\nassistant: %s", clipExcerpt(x.Reply, left))
	}
	return b.String()
}

// clipExcerpt is up to n runes of x's text, marked when it is not all of
// the message.
func clipExcerpt(x recall.Excerpt, n int) string {
	text, clipped := x.Content, x.Clipped
	if utf8.RuneCountInString(text) > n {
		text, clipped = string([]rune(text)[:max(n, 0)]), true
	}
	if clipped {
		text += "…"
	}
	return text
}

// wait waits for the query embedding, if one started.
func (r *recaller) wait() {
	if r.embedded != nil {
		<-r.embedded
	}
}
