package recall

import (
	"context"

	"github.com/chatmemory/backend/sessions"
)

// Recalled is an earlier exchange found for a turn.
type Recalled struct {
	SessionID, SessionTitle string
	Question, Reply         Excerpt
}

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
	// Deleted, if not nil, are the ids of the user's deleted sessions, as
	// the turn read them: a recall from all sessions then leaves their
	// exchanges out by these ids and takes titles from the exchanges,
	// with no read of the hits' sessions. Nil: it reads them.
	Deleted []string
	// OffPath are, with Deleted, the messages off each session's active
	// branch as the turn read them (see sessions.OffPath): an exchange
	// among them is left out.
	OffPath map[string]sessions.Path
}

// Recall returns up to k of the user's units most relevant to a turn's
// message text (embedded as v), as search finds them (by words and by
// meaning, fused): in session s only, or (scope.All) in every active and
// archived session of the user, on each session's active branch; never
// another user's or a deleted session's. Both legs run beside each other:
// the turn waits for one round trip of the store after the embedding, as
// it did for the vector query alone.
func (svc *Service) Recall(ctx context.Context, s *sessions.Session, text string, v []float32, scope Scope, k int) ([]Recalled, error) {
	// Twice k: room for those the filters drop (each is a billed read).
	r := retrieval{userID: s.UserID, sessionID: s.ID, text: text, vector: v, k: 2 * k, cheap: true}
	if scope.All {
		r.sessionID, r.sessions = "", scope.Deleted == nil
	}
	found, _, err := svc.retrieve(ctx, r)
	if err != nil {
		return nil, err
	}
	deleted := make(map[string]bool, len(scope.Deleted))
	for _, id := range scope.Deleted {
		deleted[id] = true
	}
	var out []Recalled
	for _, f := range found {
		x := f.hit.Exchange
		if x.UserID != s.UserID {
			continue
		}
		rc := Recalled{SessionID: x.SessionID, SessionTitle: x.SessionTitle, Question: x.Question, Reply: x.Reply}
		switch hs := f.hit.Session; {
		case x.SessionID == s.ID: // as the turn read it: its active branch only
			if !onPath(s.Path(), x) {
				continue // another branch's
			}
			rc.SessionTitle = s.Title
		case !r.sessions: // told by the deleted ids and the sessions' branches
			if off := scope.OffPath[x.SessionID]; deleted[x.SessionID] || off.Contains(x.Question.Seq) && x.Question.ID != "" || off.Contains(x.Reply.Seq) && x.Reply.ID != "" {
				continue
			}
		case hs == nil || hs.UserID != s.UserID || hs.Status == sessions.StatusDeleted:
			continue
		default:
			if !onPath(hs.Path(), x) {
				continue
			}
			rc.SessionTitle = hs.Title
		}
		out = append(out, rc)
		if len(out) == k {
			break
		}
	}
	return out, nil
}
