package recall

import (
	"context"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// BackfillStore is what a backfill reads and writes.
type BackfillStore interface {
	Store
	// SessionsAfter returns up to limit sessions of every user, by id,
	// after the id after ("" for the first page).
	SessionsAfter(ctx context.Context, after string, limit int) ([]*sessions.Session, error)
	// Embedded returns the units of userID's session sessionID already
	// stored: unit id → how it was indexed.
	Embedded(ctx context.Context, userID, sessionID string) (map[string]Indexed, error)
	ListMessages(ctx context.Context, q history.ListQuery) ([]history.Message, error)
}

// Indexed is how a stored unit was indexed: the model that embedded it and
// the Lexicon that made its terms.
type Indexed struct {
	Model   string
	Lexicon int
}

// Backfill embeds the units that history holds and the recall index
// does not (those stored before embeddings were on, or embedded by another
// model, or whose terms an earlier Lexicon made), session by session in id
// order. It is idempotent (a unit stored with the current model and
// lexicon is skipped) and resumable (Run starts after a session id, and
// reports the last one it finished).
type Backfill struct {
	Embedder Embedder
	Store    BackfillStore
	// Batch is how many units one embedding request carries.
	Batch int
	// Wait is called before each embedding request (the rate limit); an
	// error stops the run.
	Wait func(ctx context.Context) error
}

// BackfillReport is what a backfill did.
type BackfillReport struct {
	Sessions int    `json:"sessions"`  // active and archived sessions read
	Units    int    `json:"exchanges"` // units found in them
	Embedded int    `json:"embedded"`  // of them, embedded and stored now
	Skipped  int    `json:"skipped"`   // already stored with the current model and lexicon
	Failed   int    `json:"failed"`    // not stored (a later run retries them)
	Requests int    `json:"embeddingRequests"`
	After    string `json:"after"` // the last session finished: resume after it
}

// sessionsPage is how many sessions a backfill reads at a time.
const sessionsPage = 100

// Run backfills the sessions after the id after; progress, if set, gets
// the report after each session. A failed embedding or save is counted and
// the run goes on; a failed read stops it (its report says where).
func (b *Backfill) Run(ctx context.Context, after string, progress func(BackfillReport)) (BackfillReport, error) {
	rep := BackfillReport{After: after}
	for {
		page, err := b.Store.SessionsAfter(ctx, rep.After, sessionsPage)
		if err != nil {
			return rep, err
		}
		for _, s := range page {
			if s.Status != sessions.StatusDeleted {
				if err := b.session(ctx, s, &rep); err != nil {
					return rep, err
				}
				rep.Sessions++
			}
			rep.After = s.ID
			if progress != nil {
				progress(rep)
			}
		}
		if len(page) < sessionsPage {
			return rep, nil
		}
	}
}

// session embeds what s lacks.
func (b *Backfill) session(ctx context.Context, s *sessions.Session, rep *BackfillReport) error {
	done, err := b.Store.Embedded(ctx, s.UserID, s.ID)
	if err != nil {
		return err
	}
	var all []history.Message // every branch's: a regenerated reply answers a question far back
	var after *int
	for {
		msgs, err := b.Store.ListMessages(ctx, history.ListQuery{SessionID: s.ID, Limit: 500, AfterSeq: after})
		if err != nil {
			return err
		}
		all = append(all, msgs...)
		if len(msgs) < 500 {
			break
		}
		after = &msgs[len(msgs)-1].Seq
	}
	var pending []UnitMessages
	for _, u := range Units(all) {
		rep.Units++
		if done[u.id()] == (Indexed{Model: b.Embedder.Model(), Lexicon: Lexicon}) {
			rep.Skipped++
		} else {
			pending = append(pending, u)
		}
	}
	for len(pending) > 0 {
		n := min(max(b.Batch, 1), len(pending))
		b.embed(ctx, s, pending[:n], rep)
		if err := ctx.Err(); err != nil {
			return err
		}
		pending = pending[n:]
	}
	return nil
}

// embed embeds units in one request and stores each.
func (b *Backfill) embed(ctx context.Context, s *sessions.Session, xs []UnitMessages, rep *BackfillReport) {
	if b.Wait != nil {
		if err := b.Wait(ctx); err != nil {
			rep.Failed += len(xs)
			return
		}
	}
	rep.Requests++
	stored, _ := storeUnits(ctx, b.Embedder, b.Store, s, xs)
	rep.Embedded += stored
	rep.Failed += len(xs) - stored
}
