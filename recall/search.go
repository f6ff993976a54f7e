package recall

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Result is one message a search found.
type Result struct {
	SessionID    string          `json:"sessionId"`
	SessionTitle string          `json:"sessionTitle"`
	MessageID    string          `json:"messageId"`
	Seq          int             `json:"seq"`
	Role         history.Role    `json:"role"`
	Snippet      string          `json:"snippet"`
	Score        float64         `json:"score"`
	Exact        bool            `json:"exact"`   // the message holds the query (a quoted one: the phrase) as written, case aside
	Matched      []string        `json:"matched"` // why it was found: "words" (it holds a word of the query), "meaning" (by embedding)
	CreatedAt    string          `json:"createdAt"`
	Status       sessions.Status `json:"sessionStatus"`
}

// Why a result matched.
const (
	MatchedWords   = "words"
	MatchedMeaning = "meaning"
)

// MinSimilarity is the least cosine similarity a match by meaning needs:
// below it texts share next to nothing, and a search says so rather than
// list whatever is least far.
const MinSimilarity = 0.2

// Search limits.
const (
	MaxQueryChars = 500
	MaxResults    = 50
	snippetChars  = 240
	// perTerm is how many units the lexical leg reads for each term of a
	// query: all of a rare word's, the first of a common one's (whose
	// weight is small anyway).
	perTerm = 40
)

// Search returns userID's best matches for query, in sessionID only if it
// is set, from their active and archived sessions, on each session's
// active branch, best first. Two legs run side by side: by words (BM25
// over the units that hold a word of the query) and by meaning (the
// nearest by embedding, at least MinSimilarity near); their rankings are
// fused by reciprocal rank. A message that holds the query as written (a
// quoted query: the phrase) is exact and ranks first; a quoted query
// finds only such messages. A query that shares no word and no meaning
// with anything finds nothing.
func (svc *Service) Search(ctx context.Context, userID, query, sessionID string, limit int) ([]Result, error) {
	if err := CheckSearch(query, sessionID, limit); err != nil {
		return nil, err
	}
	phrase, quoted := Phrase(query)
	got, err := svc.retrieve(ctx, retrieval{userID: userID, sessionID: sessionID, text: phrase, k: 2 * limit, visibility: true})
	if err != nil {
		return nil, err
	}
	if err := svc.withTitles(ctx, got.found); err != nil {
		return nil, err
	}
	return rank(got, userID, phrase, quoted, limit), nil
}

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

// rank turns what retrieval found for userID into results: a unit of
// another user, in a deleted session, or off its session's active branch
// (as the Visibility read beside the legs tells), or of a session gone, is
// dropped; of its messages the one holding the phrase (else the one whose
// words weigh more for it, else the reply) is shown; exact matches first,
// then by fused score.
func rank(got retrieved, userID, phrase string, quoted bool, limit int) []Result {
	terms := QueryTerms(phrase)
	v := got.visibility.view()
	var out []Result
	for _, f := range got.found {
		x := f.hit.Unit
		title, ok := titleOf(f.hit, userID)
		if !ok || x.UserID != userID || !v.shows(x) {
			continue
		}
		m, role, exact := pick(x, got.corpus, phrase, terms)
		if quoted && !exact {
			continue
		}
		score := f.score
		if exact {
			score++ // above every match that is not
		}
		out = append(out, Result{SessionID: x.SessionID, SessionTitle: title, MessageID: m.ID, Seq: m.Seq, Role: role,
			Snippet: snippet(m.Content, strings.ToLower(phrase)), Score: score, Exact: exact, Matched: f.matched(),
			CreatedAt: m.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), Status: v.status(x.SessionID)})
	}
	bestFirst(out, func(r Result) float64 { return r.Score })
	return out[:min(len(out), limit)]
}

// pick is the message of x a result shows, with its role, and whether it
// holds phrase as written: the first holding it, else the one whose words
// weigh most for the query, else the last (the reply, when there is one).
func pick(x Unit, c Corpus, phrase string, terms []string) (Excerpt, history.Role, bool) {
	type side struct {
		m    Excerpt
		role history.Role
	}
	var sides []side
	if x.Question.ID != "" {
		sides = append(sides, side{x.Question, history.RoleUser})
	}
	for _, t := range x.Tools {
		sides = append(sides, side{t, history.RoleTool})
	}
	if x.Reply.ID != "" {
		sides = append(sides, side{x.Reply, history.RoleAssistant})
	}
	for _, sd := range sides {
		if containsPhrase(sd.m.Content, phrase) {
			return sd.m, sd.role, true
		}
	}
	best, most := sides[len(sides)-1], 0.0
	for _, sd := range sides {
		if w := c.BM25(terms, BagOf(sd.m.Content)); w > most {
			best, most = sd, w
		}
	}
	return best.m, best.role, false
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
