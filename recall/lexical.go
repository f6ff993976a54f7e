package recall

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// The lexical leg of retrieval scores exact words as Okapi BM25 does:
// each unit (an exchange, or a message with no partner) keeps its terms
// (words lower-cased, English stop words out, stemmed) with their
// counts and its length; a search finds, for each term of the query, the
// units that hold it, and scores them by term frequency, inverse document
// frequency over the user's own units and length normalization. It does
// not depend on the embedder: a word said once is found whatever the
// embedding model makes of it.

// MaxUnitTerms bounds the distinct terms a unit keeps (in the order they
// first appear, the question's first): a document holds them, and an
// array-contains query finds a unit by them.
const MaxUnitTerms = 400

// MaxQueryTerms bounds the terms a query looks for (each is one query of
// the store, and Firestore's array-contains-any takes at most 30).
const MaxQueryTerms = 12

// BM25 parameters (the usual ones).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Lexicon names the way Terms makes terms, stored with each unit's bag:
// a unit whose bag an earlier way made is indexed again (see Backfill), for
// a query's terms would miss its words. 1: plurals folded; 2: the Snowball
// (Porter2) English stemmer; 3: the same terms, which a store also keeps
// so that it can find a unit by equality (firestoredb's has map).
const Lexicon = 3

// Bag is what the lexical leg keeps of a unit: its distinct terms (at
// most MaxUnitTerms), how often each occurs, its length in terms, and the
// Lexicon that made them.
type Bag struct {
	Terms   []string
	TF      map[string]int
	Len     int
	Lexicon int
}

// BagOf is the bag of the texts, in order.
func BagOf(texts ...string) Bag {
	b := Bag{TF: map[string]int{}, Lexicon: Lexicon}
	for _, t := range texts {
		for _, term := range Terms(t) {
			b.Len++
			if _, ok := b.TF[term]; !ok {
				if len(b.Terms) == MaxUnitTerms {
					continue
				}
				b.Terms = append(b.Terms, term)
			}
			b.TF[term]++
		}
	}
	return b
}

// QueryTerms are the distinct terms of a query, at most MaxQueryTerms:
// the longest first when it has more (a longer word is usually rarer).
func QueryTerms(query string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Terms(query) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) > MaxQueryTerms {
		sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
		out = out[:MaxQueryTerms]
	}
	return out
}

// Terms returns the terms of text, in order, repeats included: its words
// lower-cased, English stop words and lone letters out, each stemmed by
// the Snowball English stemmer ("swimming" and "swim" are one term,
// "hotels" and "hotel", "cities" and "city"). A rare word is stemmed the
// same way in a unit and in a query, so it is still found.
func Terms(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	out := make([]string, 0, len(words))
	for _, w := range words {
		if stopWords[w] || (len(w) == 1 && !unicode.IsNumber([]rune(w)[0])) {
			continue
		}
		out = append(out, english.Stem(w, false))
	}
	return out
}

// Corpus is what BM25 knows of the units searched: how many there are,
// how long they are on average, and in how many each term occurs.
type Corpus struct {
	N      int
	AvgLen float64
	DF     map[string]int
}

// BM25 scores a unit's bag for the query terms against c.
func (c Corpus) BM25(terms []string, b Bag) float64 {
	var score float64
	avg := c.AvgLen
	if avg <= 0 {
		avg = 1
	}
	for _, t := range terms {
		tf := float64(b.TF[t])
		if tf == 0 {
			continue
		}
		score += c.idf(t) * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(b.Len)/avg))
	}
	return score
}

// idf is term t's inverse document frequency in c.
func (c Corpus) idf(t string) float64 {
	df := float64(c.DF[t])
	n := math.Max(float64(c.N), df)
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// Phrase is a query as it is matched as written: a query in double quotes
// is that phrase (quoted true); any other is its text.
func Phrase(query string) (phrase string, quoted bool) {
	q := strings.TrimSpace(query)
	if len(q) >= 2 && strings.HasPrefix(q, `"`) && strings.HasSuffix(q, `"`) {
		return strings.TrimSpace(q[1 : len(q)-1]), true
	}
	return q, false
}

// containsPhrase reports whether text holds phrase, case and runs of
// white space aside.
func containsPhrase(text, phrase string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	p := norm(phrase)
	return p != "" && strings.Contains(norm(text), p)
}

// stopWords are English function words: they say nothing of what a text
// is about, and every text has them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from
further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's i i'd
i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only or other
ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they'd they'll they're they've this those through to too under until up very
was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's with
won't would wouldn't you you'd you'll you're you've your yours yourself yourselves also just will s t d ll m re ve don doesn didn
isn wasn weren hasn haven hadn won wouldn shouldn couldn mustn yes ok okay oh hi hello thanks thank please`) {
		m[w] = true
	}
	return m
}()

// StopWord reports whether w (lower-cased) is an English stop word.
func StopWord(w string) bool { return stopWords[w] }

// BM25 weighs a term by how many of the user's units hold it among how
// many units the user has. That number changes slowly and weighs every
// term alike, so a retrieval counts it (an aggregation: a query the
// Firestore emulator answers by going through the whole database, as
// long as a term's) only when it has not counted it lately for the same
// user, in this process: nothing is written for it, and no per-user
// document changes with every unit indexed.

// UnitCountTTL is how long a count of a user's units is used before a
// retrieval counts them again.
const UnitCountTTL = 10 * time.Minute

// maxCountedUsers bounds the counts kept; past it, they are forgotten
// all at once (each is counted again on its next retrieval).
const maxCountedUsers = 10000

// unitCounts are the counts of users' units lately made, by user.
type unitCounts struct {
	mu     sync.Mutex
	byUser map[string]unitCount
}

type unitCount struct {
	n  int
	at time.Time
}

// known is userID's count if counted less than UnitCountTTL before now.
func (c *unitCounts) known(userID string, now time.Time) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ok := c.byUser[userID]
	if !ok || now.Sub(got.at) >= UnitCountTTL || now.Before(got.at) {
		return 0, false
	}
	return got.n, true
}

// keep remembers userID's count n, made at now.
func (c *unitCounts) keep(userID string, n int, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUser == nil || len(c.byUser) >= maxCountedUsers {
		c.byUser = map[string]unitCount{}
	}
	c.byUser[userID] = unitCount{n: n, at: now}
}

// countUnits counts userID's units and remembers the count.
func (svc *Service) countUnits(ctx context.Context, userID string) (int, error) {
	at := svc.now()
	n, err := svc.Store.CountUnits(ctx, userID)
	if err == nil {
		svc.counts.keep(userID, n, at)
	}
	return n, err
}

// now is the service's clock.
func (svc *Service) now() time.Time {
	if svc.Now != nil {
		return svc.Now()
	}
	return time.Now()
}
