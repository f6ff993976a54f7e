package recall

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Service embeds exchanges and searches them.
type Service struct {
	Embedder Embedder
	Store    Store
}

// maxEmbedChars bounds the text embedded per exchange (embedding models
// take about 8,000 tokens; the start of a long message says what it is
// about).
const maxEmbedChars = 16000

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// excerpt is m as an exchange keeps it.
func excerpt(m *history.Message) Excerpt {
	c := clip(m.Content, MaxExcerptChars)
	return Excerpt{ID: m.ID, Seq: m.Seq, Content: c, Clipped: len(c) < len(m.Content), CreatedAt: m.CreatedAt}
}

// Index embeds the exchange of question q and reply r of session s and
// stores it with its words (one write).
func (svc *Service) Index(ctx context.Context, s *sessions.Session, q, r *history.Message) error {
	x, err := svc.unitOf(ctx, s, q, r)
	if err != nil {
		return err
	}
	return svc.Store.SaveExchange(ctx, x)
}

// IndexMessage embeds and stores message m of session s as a unit of its
// own: a message with no partner (a session's opening reply, a question
// left unanswered, a reply stored apart from its question).
func (svc *Service) IndexMessage(ctx context.Context, s *sessions.Session, m *history.Message) error {
	var q, r *history.Message
	if m.Role == history.RoleUser {
		q = m
	} else {
		r = m
	}
	x, err := svc.unitOf(ctx, s, q, r)
	if err != nil {
		return err
	}
	return svc.Store.SaveExchange(ctx, x)
}

// unitOf is the unit of question q and reply r (either may be nil),
// embedded.
func (svc *Service) unitOf(ctx context.Context, s *sessions.Session, q, r *history.Message) (Exchange, error) {
	x := Exchange{UserID: s.UserID, SessionID: s.ID, Model: svc.Embedder.Model()}
	var texts []string
	if q != nil {
		x.Question = excerpt(q)
		texts = append(texts, clip(q.Content, maxEmbedChars/2))
	}
	if r != nil {
		x.Reply = excerpt(r)
		texts = append(texts, clip(r.Content, maxEmbedChars/2))
	}
	v, err := svc.Embedder.Embed(ctx, []string{strings.Join(texts, "\n")})
	if err != nil {
		return x, err
	}
	x.Vector, x.Bag = v[0], BagOf(texts...)
	return x, nil
}

// ExportUser says what the recall index holds for userID (for an export:
// the vectors themselves are derived numbers, not shipped), or nil if
// nothing.
func (svc *Service) ExportUser(ctx context.Context, userID string) (any, error) {
	n, err := svc.Store.CountExchanges(ctx, userID)
	if err != nil || n == 0 {
		return nil, err
	}
	return map[string]any{"exchanges": n, "model": svc.Embedder.Model(),
		"about": "each of these exchanges (a question and its reply) is also held as an embedding (a vector of numbers computed from its text) with the start of both messages, to search and recall them; they go with their session"}, nil
}

// EraseUser deletes nothing of its own: exchanges live under their
// sessions, and an erasure purges every session (and sweeps what an
// interrupted purge left by user id).
func (svc *Service) EraseUser(context.Context, string) (int, error) { return 0, nil }
