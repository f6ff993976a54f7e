package recall

import (
	"context"
	"errors"
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

// excerpt is m as a unit keeps it: its first n bytes (whole runes).
func excerpt(m *history.Message, n int) Excerpt {
	c := clip(m.Content, n)
	return Excerpt{ID: m.ID, Seq: m.Seq, Content: c, Clipped: len(c) < len(m.Content), CreatedAt: m.CreatedAt}
}

// Index embeds and stores the units of msgs (see Units) of session s,
// one write each; it returns how many it stored, and the errors of those
// it did not (each is tried).
func (svc *Service) Index(ctx context.Context, s *sessions.Session, msgs []history.Message) (int, error) {
	var errs []error
	stored := 0
	for _, u := range Units(msgs) {
		x := u.exchange(s, svc.Embedder.Model())
		v, err := svc.Embedder.Embed(ctx, []string{u.text()})
		if err == nil {
			x.Vector = v[0]
			err = svc.Store.SaveExchange(ctx, x)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stored++
	}
	return stored, errors.Join(errs...)
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
