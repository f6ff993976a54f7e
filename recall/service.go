package recall

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Service embeds exchanges and searches them.
type Service struct {
	Embedder Embedder
	Store    Store
}

// exchangeText is what an exchange is embedded as.
func exchangeText(q, r *history.Message) string {
	return clip(q.Content, maxEmbedChars/2) + "\n" + clip(r.Content, maxEmbedChars/2)
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
// stores it (one write).
func (svc *Service) Index(ctx context.Context, s *sessions.Session, q, r *history.Message) error {
	v, err := svc.Embedder.Embed(ctx, []string{exchangeText(q, r)})
	if err != nil {
		return err
	}
	return svc.Store.SaveExchange(ctx, Exchange{UserID: s.UserID, SessionID: s.ID, Question: excerpt(q), Reply: excerpt(r),
		Model: svc.Embedder.Model(), Vector: v[0]})
}

// Result is one message a search found.
type Result struct {
	SessionID    string          `json:"sessionId"`
	SessionTitle string          `json:"sessionTitle"`
	MessageID    string          `json:"messageId"`
	Seq          int             `json:"seq"`
	Role         history.Role    `json:"role"`
	Snippet      string          `json:"snippet"`
	Score        float64         `json:"score"`
	Exact        bool            `json:"exact"` // the message holds the query as written (case aside)
	CreatedAt    string          `json:"createdAt"`
	Status       sessions.Status `json:"sessionStatus"`
}

// MinSimilarity is the least cosine similarity a match by meaning needs
// (exact phrases need none): below it texts share next to nothing, and a
// search says so rather than list whatever is least far.
const MinSimilarity = 0.1

// Search limits.
const (
	MaxQueryChars = 500
	MaxResults    = 50
	snippetChars  = 240
)

// CheckSearch refuses a search that could find nothing as asked, naming
// the parameter at fault.
func CheckSearch(query, sessionID string, limit int) error {
	query = strings.TrimSpace(query)
	switch {
	case query == "":
		return errs.Errorf(errs.EINVALID, "q: a search needs some text")
	case utf8.RuneCountInString(query) > MaxQueryChars:
		return errs.Errorf(errs.EINVALID, "q: at most %d characters", MaxQueryChars)
	case limit < 1 || limit > MaxResults:
		return errs.Errorf(errs.EINVALID, "limit: from 1 to %d", MaxResults)
	}
	if sessionID != "" {
		if err := sessions.CheckID(sessionID); err != nil {
			return errs.Errorf(errs.EINVALID, "sessionId: %s", errs.Message(err))
		}
	}
	return nil
}

// Search returns userID's best matches for query, in sessionID only if it
// is set: by meaning (the nearest exchanges) and by exact phrase (an
// exchange that holds the query as written ranks first), from active and
// archived sessions, best first.
func (svc *Service) Search(ctx context.Context, userID, query, sessionID string, limit int) ([]Result, error) {
	if err := CheckSearch(query, sessionID, limit); err != nil {
		return nil, err
	}
	query = strings.TrimSpace(query)
	v, err := svc.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	// Twice the results asked for: some are in deleted sessions, and an
	// exact phrase may rank a farther one first.
	hits, err := svc.Store.Nearest(ctx, Query{UserID: userID, SessionID: sessionID, Vector: v[0], K: min(2*limit, 2*MaxResults), Sessions: true})
	if err != nil {
		return nil, err
	}
	return rank(hits, query, limit), nil
}

// rank turns hits into results: an exchange in a session that is gone or
// deleted, or of another user, is dropped; of the two messages the one
// holding the query is shown (else the reply); exact matches first, then
// by similarity.
func rank(hits []Hit, query string, limit int) []Result {
	lower := strings.ToLower(query)
	var out []Result
	for _, h := range hits {
		s := h.Session
		if s == nil || s.UserID != h.Exchange.UserID || s.Status == sessions.StatusDeleted {
			continue
		}
		m, role, exact := h.Exchange.Reply, history.RoleAssistant, false
		if strings.Contains(strings.ToLower(h.Exchange.Question.Content), lower) {
			m, role, exact = h.Exchange.Question, history.RoleUser, true
		} else if strings.Contains(strings.ToLower(m.Content), lower) {
			exact = true
		}
		score := 1 - h.Distance
		if exact {
			score++ // above every match by meaning alone
		} else if score < MinSimilarity {
			continue
		}
		out = append(out, Result{SessionID: s.ID, SessionTitle: s.Title, MessageID: m.ID, Seq: m.Seq, Role: role,
			Snippet: snippet(m.Content, lower), Score: score, Exact: exact,
			CreatedAt: m.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), Status: s.Status})
	}
	slices.SortStableFunc(out, func(a, b Result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out[:min(len(out), limit)]
}

// snippet is up to snippetChars of text around the first match of lower
// (or its start), on one line.
func snippet(text, lower string) string {
	text = strings.Join(strings.Fields(text), " ")
	runes := []rune(text)
	if len(runes) <= snippetChars {
		return text
	}
	at := 0
	if i := strings.Index(strings.ToLower(text), lower); i >= 0 {
		at = utf8.RuneCountInString(text[:i])
	}
	start := max(0, min(at-snippetChars/3, len(runes)-snippetChars))
	s := string(runes[start : start+snippetChars])
	if start > 0 {
		s = "…" + s
	}
	if start+snippetChars < len(runes) {
		s += "…"
	}
	return s
}

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

// Recall returns up to k of the user's exchanges nearest to v, at least
// MinSimilarity near, nearest first: in session s only (one vector query:
// s is the turn's, and only its active branch counts), or (scope.All) in
// every active and archived session of its user, never a deleted one's
// (told by scope.Deleted, or by a batched read of the hits' sessions
// after the query).
func (svc *Service) Recall(ctx context.Context, s *sessions.Session, v []float32, scope Scope, k int) ([]Recalled, error) {
	// Twice k: room for those the filters drop (each is a billed read).
	q := Query{UserID: s.UserID, SessionID: s.ID, Vector: v, K: 2 * k}
	if scope.All {
		q.SessionID, q.Sessions = "", scope.Deleted == nil
	}
	hits, err := svc.Store.Nearest(ctx, q)
	if err != nil {
		return nil, err
	}
	deleted := make(map[string]bool, len(scope.Deleted))
	for _, id := range scope.Deleted {
		deleted[id] = true
	}
	var out []Recalled
	for _, h := range hits {
		x := h.Exchange
		if x.UserID != s.UserID || 1-h.Distance < MinSimilarity {
			continue
		}
		r := Recalled{SessionID: x.SessionID, SessionTitle: x.SessionTitle, Question: x.Question, Reply: x.Reply}
		switch hs := h.Session; {
		case x.SessionID == s.ID: // as the turn read it: its active branch only
			if p := s.Path(); !p.Contains(x.Question.Seq) || !p.Contains(x.Reply.Seq) {
				continue // another branch's
			}
			r.SessionTitle = s.Title
		case !q.Sessions: // told by the deleted ids and the sessions' branches
			if off := scope.OffPath[x.SessionID]; deleted[x.SessionID] || off.Contains(x.Question.Seq) || off.Contains(x.Reply.Seq) {
				continue
			}
		case hs == nil || hs.UserID != s.UserID || hs.Status == sessions.StatusDeleted:
			continue
		default:
			if p := hs.Path(); !p.Contains(x.Question.Seq) || !p.Contains(x.Reply.Seq) {
				continue
			}
			r.SessionTitle = hs.Title
		}
		out = append(out, r)
		if len(out) == k {
			break
		}
	}
	return out, nil
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
