package recall

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"unicode/utf8"

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

// recallPerTerm is how many units a turn's recall reads at most for each
// term of its message (a search reads 40): with 20 a turn's recall is
// within 0.02 of search on the conversation fixture's dev part, with 10
// it was not. recallUnits bounds what it reads by words in all: a long
// message's terms share it (each at least one unit, so a word said once
// is still found), where 20 a term read up to 240 units a turn.
const (
	recallPerTerm = 20
	recallUnits   = 80
)

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
	r := retrieval{userID: s.UserID, sessionID: s.ID, text: text, vector: v, k: 2 * k, perTerm: recallPerTerm, units: recallUnits}
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
	view.on = map[string]sessions.Path{s.ID: s.Path()} // the turn's session as it read it
	var out []Unit
	for _, f := range got.found {
		x := f.hit.Unit
		if x.Question.ID == "" && x.Reply.ID == "" {
			continue // a tool round's results alone: search shows them, a turn's context does not
		}
		switch title, ok := titleOf(f.hit, s.UserID); {
		case x.UserID != s.UserID || !view.shows(x):
			continue
		case x.SessionID == s.ID:
			x.SessionTitle = s.Title
		case !ok:
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

// view is a Visibility ready to ask, by session id; on holds, for a
// session read as it is now (the turn's own), its active branch itself.
type view struct {
	deleted, archived map[string]bool
	off, on           map[string]sessions.Path
}

func (v Visibility) view() view {
	out := view{deleted: map[string]bool{}, archived: map[string]bool{}, off: v.OffPath}
	for _, id := range v.Deleted {
		out.deleted[id] = true
	}
	for _, id := range v.Archived {
		out.archived[id] = true
	}
	return out
}

// shows reports whether x is on its session's active branch: every
// message of it on the branch on holds for its session, else (a session
// not deleted) none of them off it.
func (v view) shows(x Unit) bool {
	p, on := v.on[x.SessionID]
	if !on {
		if v.deleted[x.SessionID] {
			return false
		}
		p = v.off[x.SessionID]
	}
	for _, m := range slices.Concat([]Excerpt{x.Question, x.Reply}, x.Tools) {
		if m.ID != "" && p.Contains(m.Seq) != on {
			return false
		}
	}
	return true
}

// status is the status of session id, not deleted.
func (v view) status(id string) sessions.Status {
	if v.archived[id] {
		return sessions.StatusArchived
	}
	return sessions.StatusActive
}

// titleOf is the title of h's session: the one its unit carries, else
// (a unit stored before units carried it) that of its session as read,
// if userID's and not deleted; false if none.
func titleOf(h Hit, userID string) (string, bool) {
	if t := h.Unit.SessionTitle; t != "" {
		return t, true
	}
	s := h.Session
	if s == nil || s.UserID != userID || s.Status == sessions.StatusDeleted {
		return "", false
	}
	return s.Title, true
}

// retrieval is what a search or a recall looks for.
type retrieval struct {
	userID, sessionID string // sessionID "": every session of the user
	text              string // the words to look for (and to embed, unless vector is set)
	vector            []float32
	k                 int  // how many each leg returns at most
	visibility        bool // the user's Visibility too, read beside the legs
	// perTerm is how many units the words leg reads for each term (0:
	// a search's perTerm); units, if set, how many in all: the terms
	// share them, each at least one.
	perTerm, units int
}

// fused is a unit retrieval found, with its fused score and the legs that
// found it.
type fused struct {
	hit                    Hit
	score                  float64
	words, meaning         bool
	wordsRank, meaningRank int // from 0; the leg's length if it did not find it
}

func (f fused) matched() []string {
	var out []string
	if f.words {
		out = append(out, MatchedWords)
	}
	if f.meaning {
		out = append(out, MatchedMeaning)
	}
	return out
}

// retrieve runs both legs side by side (the lexical one, the count of the
// user's units unless counted lately and, when asked, their Visibility at
// once; the vector query once the text is embedded) and fuses their
// rankings by reciprocal rank: one round trip of the store after the
// embedding, whatever the legs find.
func (svc *Service) retrieve(ctx context.Context, r retrieval) (retrieved, error) {
	legs, err := svc.legs(ctx, r)
	if err != nil {
		return retrieved{}, err
	}
	return retrieved{found: svc.fusion().fuse(legs), corpus: legs.corpus, visibility: legs.visibility}, nil
}

// legs runs both legs side by side and returns their rankings, each
// the first r.k.
func (svc *Service) legs(ctx context.Context, r retrieval) (Ranked, error) {
	terms := QueryTerms(r.text)
	var (
		wg                 sync.WaitGroup
		lex                LexicalHits
		units              int
		vis                Visibility
		lexErr, nErr, vErr error
	)
	if r.visibility {
		wg.Go(func() { vis, vErr = svc.Store.Visibility(ctx, r.userID) })
	}
	if svc.Legs == MeaningOnly {
		terms = nil
	}
	if len(terms) > 0 {
		q := LexicalQuery{UserID: r.userID, SessionID: r.sessionID, Terms: terms, PerTerm: r.termUnits(len(terms))}
		wg.Go(func() { lex, lexErr = svc.Store.Lexical(ctx, q) })
		var known bool
		if units, known = svc.counts.known(r.userID, svc.now()); !known {
			wg.Go(func() { units, nErr = svc.countUnits(ctx, r.userID) })
		}
	}
	v, near, err := svc.nearest(ctx, r)
	wg.Wait()
	if err := errors.Join(err, lexErr, nErr, vErr); err != nil {
		return Ranked{}, err
	}
	c := corpusOf(lex, units)
	words := byWords(candidates(lex.Hits, near), terms, c)
	meaning := svc.byMeaning(near, lex.Hits, v)
	return Ranked{words: words[:min(len(words), r.k)], meaning: meaning[:min(len(meaning), r.k)], terms: terms, corpus: c, visibility: vis}, nil
}

// termUnits is how many units the words leg reads for each of n terms.
func (r retrieval) termUnits(n int) int {
	per := cmp.Or(r.perTerm, perTerm)
	if r.units > 0 {
		per = max(1, min(per, r.units/n))
	}
	return per
}

// retrieved is what a retrieval found: the units, best first, the corpus
// BM25 scored them against, and the user's Visibility if it was asked for.
type retrieved struct {
	found      []fused
	corpus     Corpus
	visibility Visibility
}

// withTitles sets, for each unit found that does not carry its session's
// title (one stored before units carried it), its session, read in one
// batch: nothing to read for any other.
func (svc *Service) withTitles(ctx context.Context, found []fused) error {
	var ids []string
	seen := map[string]bool{}
	for _, f := range found {
		if id := f.hit.Unit.SessionID; f.hit.Unit.SessionTitle == "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	byID, err := svc.Store.SessionsOf(ctx, ids)
	for i := range found {
		found[i].hit.Session = byID[found[i].hit.Unit.SessionID]
	}
	return err
}

// corpusOf is what BM25 knows from a lexical query: the user's units
// (without a count, ten times the units found: IDF then weighs terms by
// how many of those found hold them), and for each term how many units
// the store found holding it: exact for a term held by fewer than the
// query's PerTerm, PerTerm for one held by more (a lower bound: every
// common term weighs as one held by PerTerm), with their average length.
func corpusOf(lex LexicalHits, units int) Corpus {
	if units == 0 {
		units = 10 * len(lex.Hits)
	}
	c := Corpus{N: units, DF: lex.Found}
	for _, h := range lex.Hits {
		c.AvgLen += float64(h.Unit.Bag.Len)
	}
	if len(lex.Hits) > 0 {
		c.AvgLen /= float64(len(lex.Hits))
	}
	return c
}

// nearest is the meaning leg: the units nearest the text's embedding,
// and the embedding (nil with the words leg alone).
func (svc *Service) nearest(ctx context.Context, r retrieval) ([]float32, []Hit, error) {
	if svc.Legs == WordsOnly {
		return nil, nil, nil
	}
	v := r.vector
	if v == nil {
		got, err := svc.Embedder.Embed(ctx, []string{clip(r.text, maxEmbedChars)})
		if err != nil {
			return nil, nil, err
		}
		v = got[0]
	}
	near, err := svc.Store.Nearest(ctx, Query{UserID: r.userID, SessionID: r.sessionID, Vector: v, K: r.k})
	return v, near, err
}

// byWords ranks the candidates that hold a word of the query by their
// words (BM25 against c), best first.
func byWords(pool []Hit, terms []string, c Corpus) []Hit {
	type scored struct {
		h Hit
		s float64
	}
	var out []scored
	for _, h := range pool {
		if s := c.BM25(terms, h.Unit.Bag); s > 0 {
			out = append(out, scored{h, s})
		}
	}
	bestFirst(out, func(x scored) float64 { return x.s })
	hits := make([]Hit, len(out))
	for i, x := range out {
		hits[i] = x.h
	}
	return hits
}

// bestFirst sorts xs by score, highest first, keeping the order of ties.
func bestFirst[T any](xs []T, score func(T) float64) {
	slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(score(b), score(a)) })
}

// byMeaning ranks by meaning, nearest first, the units at least
// MinSimilarity near the query's embedding v: those the vector query found
// by their distance, and those found by words by their own vectors (read
// with them; when the embedder that made v made them), so that among the
// units that hold the query's words the one that also means most like it
// ranks first by meaning, though the vector query's nearest did not reach
// it. Nil without v (the words leg alone).
func (svc *Service) byMeaning(near, lexical []Hit, v []float32) []Hit {
	if v == nil {
		return nil
	}
	model := svc.Embedder.Model()
	out := slices.Clone(near)
	seen := map[string]bool{}
	for _, h := range near {
		seen[h.Unit.ID()] = true
	}
	for _, h := range lexical {
		if x := h.Unit; !seen[x.ID()] && len(x.Vector) == len(v) && x.Model == model {
			seen[x.ID()] = true
			h.Distance = Cosine(x.Vector, v)
			out = append(out, h)
		}
	}
	out = slices.DeleteFunc(out, func(h Hit) bool { return 1-h.Distance < MinSimilarity })
	slices.SortStableFunc(out, func(a, b Hit) int { return cmp.Compare(a.Distance, b.Distance) })
	return out
}

// candidates are the units either leg found, each once: the lexical
// hits, then those found by meaning alone.
func candidates(lexical, near []Hit) []Hit {
	seen := map[string]bool{}
	var out []Hit
	for _, h := range slices.Concat(lexical, near) {
		if id := h.Unit.ID(); !seen[id] {
			seen[id] = true
			out = append(out, h)
		}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
