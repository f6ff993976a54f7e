package recall

import (
	"context"

	"github.com/chatmemory/backend/sessions"
)

// EmbedQuery embeds a turn's message for Recall (a turn starts it beside
// its first read).
func (svc *Service) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := svc.Embedder.Embed(ctx, []string{clip(text, maxEmbedChars)})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// Scope is where a recall looks.
type Scope struct {
	// All looks in every active and archived session of the user, not
	// only in the turn's.
	All bool
	// Known, if not nil, is the user's Visibility as the turn read it (its
	// deleted sessions and the messages off each session's active branch):
	// a recall from all sessions then reads nothing more. Nil: it reads
	// the Visibility beside its queries.
	Known *Visibility
}

// recallPerTerm is how many units a turn's recall reads for each term of
// its message (a search reads 40): with 20 a turn's recall is within 0.02
// of search on the conversation fixture's dev part, with 10 it was not.
const recallPerTerm = 20

// Recall returns up to k of the user's units most relevant to a turn's
// message text (embedded as v), each with its session's title as it is
// now, as search finds them (by words and by meaning, fused): in session s
// only, or (scope.All) in every active and
// archived session of the user, on each session's active branch; never
// another user's or a deleted session's. Both legs run beside each other:
// the turn waits for one round trip of the store after the embedding, as
// it did for the vector query alone.
func (svc *Service) Recall(ctx context.Context, s *sessions.Session, text string, v []float32, scope Scope, k int) ([]Unit, error) {
	// Twice k: room for those the filters drop (each is a billed read).
	// The same retrieval as a search's: the best units for the message
	// by words (a query a term, beside the counts), not the first.
	r := retrieval{userID: s.UserID, sessionID: s.ID, text: text, vector: v, k: 2 * k, perTerm: recallPerTerm}
	if scope.All {
		r.sessionID, r.visibility = "", scope.Known == nil
	}
	got, err := svc.retrieve(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := svc.withTitles(ctx, got.found); err != nil {
		return nil, err
	}
	known := got.visibility
	if scope.Known != nil {
		known = *scope.Known
	}
	view := known.view()
	var out []Unit
	for _, f := range got.found {
		x := f.hit.Unit
		if x.Question.ID == "" && x.Reply.ID == "" {
			continue // a tool round's results alone: search shows them, a turn's context does not
		}
		switch title, ok := titleOf(f.hit, s.UserID); {
		case x.UserID != s.UserID:
			continue
		case x.SessionID == s.ID: // as the turn read it: its active branch only
			if !onPath(s.Path(), x) {
				continue // another branch's
			}
			x.SessionTitle = s.Title
		case !ok || !view.shows(x):
			continue
		default:
			x.SessionTitle = title
		}
		out = append(out, x)
		if len(out) == k {
			break
		}
	}
	return out, nil
}
