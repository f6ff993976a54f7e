package recall

import (
	"context"
	"errors"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Service embeds units and searches them.
type Service struct {
	Embedder Embedder
	Store    Store
	// Legs are the legs a retrieval runs: both (the default), or one
	// alone (to measure each).
	Legs Legs
	// Fusion fuses the legs (zero: DefaultFusion).
	Fusion Fusion
	// FileText is the text of the user's attachment id (a document's; ""
	// for an image), which search finds as part of the message carrying
	// it; nil: only the files' names and alt texts are searched.
	FileText func(ctx context.Context, userID, id string) (string, error)
	// Now is the clock (nil: time.Now): how old a count of a user's
	// units is (see UnitCountTTL).
	Now func() time.Time

	counts unitCounts
}

// Legs says which legs of retrieval run.
type Legs int

// The legs.
const (
	BothLegs Legs = iota
	WordsOnly
	MeaningOnly
)

// maxEmbedChars bounds the text embedded per unit (embedding models
// take about 8,000 tokens; the start of a long message says what it is
// about).
const maxEmbedChars = 16000

// excerpt is m as a unit keeps it: its first n bytes (whole runes).
func excerpt(m *history.Message, n int) Excerpt {
	c := clip(m.Content, n)
	return Excerpt{ID: m.ID, Seq: m.Seq, Content: c, Clipped: len(c) < len(m.Content), CreatedAt: m.CreatedAt}
}

// Index embeds the units of msgs (see Units) of session s in one request
// and stores each, one write each; it returns how many it stored, and the
// errors of those it did not (each is tried).
func (svc *Service) Index(ctx context.Context, s *sessions.Session, msgs []history.Message) (int, error) {
	units := Units(msgs)
	if len(units) == 0 {
		return 0, nil
	}
	if files := svc.fileTexts(ctx, s.UserID, msgs); files != nil {
		for i := range units {
			units[i].Files = files
		}
	}
	stored, errs := storeUnits(ctx, svc.Embedder, svc.Store, s, units)
	return stored, errors.Join(errs...)
}

// fileTexts are the texts of the documents msgs carry, by id (nil if
// none). A document that cannot be read (deleted since) is searched by
// its name alone.
func (svc *Service) fileTexts(ctx context.Context, userID string, msgs []history.Message) map[string]string {
	var out map[string]string
	for _, m := range msgs {
		for _, p := range m.Attachments {
			if p.IsImage() || svc.FileText == nil {
				continue
			}
			if text, err := svc.FileText(ctx, userID, p.ID); err == nil && text != "" {
				if out == nil {
					out = map[string]string{}
				}
				out[p.ID] = text
			}
		}
	}
	return out
}

// storeUnits embeds units of session s with e in one request and stores
// each in st; it returns how many it stored and why the others were not
// (the request's error once for all, when it failed).
func storeUnits(ctx context.Context, e Embedder, st Store, s *sessions.Session, units []UnitMessages) (int, []error) {
	texts := make([]string, len(units))
	for i, u := range units {
		texts[i] = u.text()
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return 0, []error{err}
	}
	var errs []error
	stored := 0
	for i, u := range units {
		x := u.stored(s, e.Model())
		x.Vector = vs[i]
		if err := st.SaveUnit(ctx, x); err != nil {
			errs = append(errs, err)
			continue
		}
		stored++
	}
	return stored, errs
}

// ExportUser says what the recall index holds for userID (for an export:
// the vectors themselves are derived numbers, not shipped), or nil if
// nothing.
func (svc *Service) ExportUser(ctx context.Context, userID string) (any, error) {
	n, err := svc.Store.CountUnits(ctx, userID)
	if err != nil || n == 0 {
		return nil, err
	}
	return map[string]any{"exchanges": n, "model": svc.Embedder.Model(),
		"about": "each of these exchanges (a question and its reply) is also held as an embedding (a vector of numbers computed from its text) with the start of both messages, to search and recall them; they go with their session"}, nil
}

// EraseUser deletes nothing of its own: units live under their
// sessions, and an erasure purges every session (and sweeps what an
// interrupted purge left by user id).
func (svc *Service) EraseUser(context.Context, string) (int, error) { return 0, nil }
