// Package longterm is what the assistant learns about a user across
// sessions: a short profile and standalone facts, extracted conservatively
// from conversations, deduplicated, superseded when contradicted (the old
// fact kept for audit, never shown again), capped and decayed, and
// precomputed into a memory block that each turn reads with one document.
package longterm

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/vector"
	"github.com/chatmemory/backend/prompts"
)

// Category of a fact.
type Category string

const (
	CategoryPreference Category = "preference"
	CategoryProject    Category = "project"
	CategoryTechnical  Category = "technical"
	CategoryPersonal   Category = "personal"
)

func validCategory(c Category) bool {
	switch c {
	case CategoryPreference, CategoryProject, CategoryTechnical, CategoryPersonal:
		return true
	}
	return false
}

// Source is where a fact was learned or confirmed: messages
// StartSeq..EndSeq of a session.
type Source struct {
	SessionID string `json:"sessionId" firestore:"sessionId"`
	StartSeq  int    `json:"startSeq" firestore:"startSeq"`
	EndSeq    int    `json:"endSeq" firestore:"endSeq"`
}

// MaxSources bounds the sessions one fact remembers as its sources (the
// most recent are kept).
const MaxSources = 20

// Fact is one thing learned about a user. It lives as long as one of its
// sources does: when the last session it was learned or confirmed in is
// purged, the fact goes too.
type Fact struct {
	ID              string     `json:"id"`
	UserID          string     `json:"-"`
	Content         string     `json:"content"`
	Category        Category   `json:"category"`
	Confidence      float64    `json:"confidence"`
	Sources         []Source   `json:"sources"`
	CreatedAt       time.Time  `json:"createdAt"`
	LastConfirmedAt time.Time  `json:"lastConfirmedAt"`
	InvalidAt       *time.Time `json:"invalidAt,omitempty"`
	SupersededBy    string     `json:"supersededBy,omitempty"`
	// Vector embeds Content (with the user's VectorModel), for merging
	// near-duplicates and choosing facts by relevance; nil if not yet.
	Vector []float32 `json:"-"`
}

// confirm records that src confirmed the fact: a session already among its
// sources has its range extended, a new one is added (the oldest dropped
// past MaxSources).
func (f *Fact) confirm(src Source) {
	for i := range f.Sources {
		if f.Sources[i].SessionID == src.SessionID {
			f.Sources[i].StartSeq = min(f.Sources[i].StartSeq, src.StartSeq)
			f.Sources[i].EndSeq = max(f.Sources[i].EndSeq, src.EndSeq)
			return
		}
	}
	f.Sources = append(f.Sources, src)
	if len(f.Sources) > MaxSources {
		f.Sources = append([]Source(nil), f.Sources[len(f.Sources)-MaxSources:]...)
	}
}

// dropSources removes the sessions gone from the fact's sources and
// reports whether it changed and whether any source is left.
func (f *Fact) dropSources(gone map[string]bool) (changed, left bool) {
	kept := f.Sources[:0:0]
	for _, s := range f.Sources {
		if !gone[s.SessionID] {
			kept = append(kept, s)
		}
	}
	changed = len(kept) != len(f.Sources)
	f.Sources = kept
	return changed, len(kept) > 0
}

// User is a user's memory document: the switch, the profile, the live
// facts (at most MaxFacts short sentences: one read brings them all) and
// the block the model sees, precomputed whenever memory changes.
type User struct {
	UserID   string  `json:"-"`
	Disabled bool    `json:"disabled"`
	Profile  Profile `json:"profile"`
	Facts    []Fact  `json:"-"` // live
	// History is what the user did over time (see History).
	History History `json:"-"`

	Block       string `json:"-"`
	BlockTokens int    `json:"blockTokens"`
	// BlockCut tells that Block leaves live facts out (the cap is full):
	// only then does choosing facts by relevance change what a turn sees.
	BlockCut bool `json:"-"`
	// StableAt divides the block: what was learned after it (facts, profile
	// fields) is its recent part, rendered last under its own header and
	// sent after the history; the rest is its stable part. It moves to the
	// save's time once a day, and when the recent part outgrows its share
	// of the cap (see settle).
	StableAt time.Time `json:"-"`
	// VectorModel is the embedding model of the facts' vectors.
	VectorModel string    `json:"-"`
	Version     int64     `json:"-"` // bumped by every change, for optimistic saves
	UpdatedAt   time.Time `json:"updatedAt"`
	// Partial tells that Facts were not read: a turn reads the memory
	// without its live facts, which are a document of their own (see
	// Store.LiveFacts).
	Partial bool `json:"-"`
	// Filed tells that superseded facts may be filed apart (see
	// Store.ListSuperseded): false only when the store knows there are
	// none, so that forgetting a purged session's facts lists them only
	// for a user who has some.
	Filed bool `json:"-"`
}

// clone returns a copy of u that changes to its facts and profile leave u
// as it was (nil for nil).
func (u *User) clone() *User {
	if u == nil {
		return nil
	}
	c := *u
	c.Facts = make([]Fact, len(u.Facts))
	for i, f := range u.Facts {
		f.Sources = slices.Clone(f.Sources)
		c.Facts[i] = f
	}
	return &c
}

// Settings of long-term memory.
type Settings struct {
	Threshold    float64 // facts under this confidence are dropped (0.7)
	MaxFacts     int     // live facts per user (100)
	DecayPerWeek float64 // confidence lost per week unconfirmed (0.01)
	BlockTokens  int     // the memory block's cap in tokens (2,000)
	EveryK       int     // messages per extraction batch (6)
	Similar      float64 // similarity from which a fact is a candidate duplicate or contradiction (0.5)
	MaxContent   int     // characters of one fact (300)
	Merge        float64 // cosine similarity from which a new fact is merged into a known one (0.9)
	// HistoryShare is the share of BlockTokens the episodic history may
	// take in the block, before facts (0.3; 0 shows no history).
	HistoryShare float64
}

// DefaultSettings are the documented defaults.
func DefaultSettings() Settings {
	return Settings{Threshold: 0.7, MaxFacts: 100, DecayPerWeek: 0.01, BlockTokens: 2000, EveryK: 6, Similar: 0.5, MaxContent: 300, Merge: 0.9, HistoryShare: 0.3}
}

var stop = map[string]bool{"the": true, "and": true, "for": true, "with": true, "that": true, "this": true,
	"user": true, "users": true, "are": true, "was": true, "has": true, "have": true, "their": true, "they": true, "not": true}

// Similarity is the overlap of two texts' content words (shared words over
// the smaller set): cheap, and only used to pick the candidates the model
// then judges. Overlap rather than Jaccard, because facts are short and a
// contradiction shares its subject but not its object ("lives in Berlin" /
// "lives in Oslo now").
func Similarity(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return 0
	}
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	return float64(inter) / float64(min(len(wa), len(wb)))
}

// words is the set of content words of s, for similarity.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) > 2 && !stop[w] {
			out[w] = true
		}
	}
	return out
}

// WithFacts returns u with its live facts: u itself, or a copy with them
// read if u was read without them.
func (svc *Service) WithFacts(ctx context.Context, u *User) (*User, error) {
	if !u.Partial {
		return u, nil
	}
	facts, err := svc.Store.LiveFacts(ctx, u.UserID)
	if err != nil {
		return nil, err
	}
	c := *u
	c.Facts, c.Partial = facts, false
	return &c, nil
}

// Relevant is what a turn adds to u's block for a message embedded as v
// (with the embedder's model): the live facts the block leaves out that
// are most relevant to the message (by cosine similarity to the
// hundredth, effective confidence breaking ties), under
// prompts.MemoryRelevant, within half the block's cap, and their tokens.
// Nothing when every fact is in the block, or the facts are not embedded
// with that model. The block itself stays as it is: a turn sends these
// after the history, so that the start of its request does not change
// with each message.
func (svc *Service) Relevant(u *User, v []float32) (string, int) {
	if svc.Embedder == nil || !u.BlockCut || u.VectorModel != svc.Embedder.Model() || len(v) == 0 {
		return "", 0
	}
	var out []Fact
	sim := map[string]float64{}
	for _, f := range byEffective(u.Facts, svc.now(), svc.Settings.DecayPerWeek) {
		if len(f.Vector) > 0 && !strings.Contains(u.Block+"\n", "\n- "+f.Content+"\n") {
			sim[f.ID] = math.Round(100*(1-vector.Cosine(v, f.Vector))) / 100
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return sim[out[i].ID] > sim[out[j].ID] })
	lines := make([]string, len(out))
	for i, f := range out {
		lines[i] = "- " + f.Content
	}
	count := func(text string) int { return blockTokens(svc.Tokens, text) }
	text, n, kept := fitLines(prompts.MemoryRelevant, lines, svc.Settings.BlockTokens/2, count)
	if kept == 0 {
		return "", 0
	}
	return text, n
}

// byEffective orders live facts by effective confidence, highest first.
func byEffective(facts []Fact, now time.Time, decay float64) []Fact {
	var live []Fact
	for _, f := range facts {
		if f.Live() {
			live = append(live, f)
		}
	}
	sort.SliceStable(live, func(i, j int) bool {
		ei, ej := live[i].Effective(now, decay), live[j].Effective(now, decay)
		if ei != ej {
			return ei > ej
		}
		return live[i].ID < live[j].ID
	})
	return live
}

// Live reports whether the fact may be shown to the model.
func (f *Fact) Live() bool { return f.InvalidAt == nil }

// Effective is the fact's confidence decayed by the weeks since it was last
// confirmed. Every live fact decays at the same rate, so their order by
// effective confidence does not change with time.
func (f *Fact) Effective(now time.Time, decayPerWeek float64) float64 {
	weeks := now.Sub(f.LastConfirmedAt).Hours() / (24 * 7)
	return math.Max(0, f.Confidence-decayPerWeek*math.Max(0, weeks))
}

// buildBlock renders the block in two parts divided by u.StableAt: its
// stable part (the profile, the history, then the facts learned before
// it, in the order given, within the cap less the recent part's share),
// then, under prompts.MemoryRecent, its recent part (profile fields and
// facts learned since, within that share). It reports whether facts were
// left out, and whether recent ones were (the recent part is full).
func buildBlock(u *User, facts []Fact, s Settings, tok TokenCounter) (text string, tokens int, cut, full bool) {
	var stable, recent []string
	after := func(t *time.Time) bool { return t != nil && t.After(u.StableAt) }
	for _, pf := range u.Profile.fields() {
		if t := strings.TrimSpace(pf.f.Text); t != "" && after(pf.f.UpdatedAt) {
			recent = append(recent, "- "+pf.label+": "+t)
		} else if t != "" {
			stable = append(stable, "- "+pf.label+": "+t)
		}
	}
	count := func(text string) int { return blockTokens(tok, text) }
	stable = append(stable, historyLines(&u.History, int(float64(s.BlockTokens)*s.HistoryShare), count)...)
	for _, f := range facts {
		if after(&f.CreatedAt) {
			recent = append(recent, "- "+f.Content)
		} else {
			stable = append(stable, "- "+f.Content)
		}
	}
	if len(stable)+len(recent) == 0 {
		return "", 0, false, false
	}
	share := s.BlockTokens / recentShare
	text, _, keptStable := fitLines(prompts.MemoryHeader, stable, s.BlockTokens-share, count)
	keptRecent := 0
	if len(recent) > 0 {
		var more string
		more, _, keptRecent = fitLines(prompts.MemoryRecent, recent, share, count)
		switch {
		case keptRecent > 0 && text == "":
			text = more
		case keptRecent > 0:
			text += "\n" + more
		}
	}
	return text, count(text), keptStable+keptRecent < len(stable)+len(recent), keptRecent < len(recent)
}

// SplitBlock divides a block buildBlock rendered into its stable part and
// its recent part (under its own header); stable is "" when the block
// holds nothing but recent lines, recent "" when it holds none.
func SplitBlock(block string) (stable, recent string) {
	s, r, ok := strings.Cut(block, "\n"+prompts.MemoryRecent)
	switch {
	case !ok:
		return block, ""
	case s == prompts.MemoryHeader:
		return "", block
	}
	return s, prompts.MemoryRecent + r
}

// recentShare: the block's recent part takes at most 1/recentShare of the cap.
const recentShare = 5

// ProfileField is one part of the profile.
type ProfileField struct {
	Text      string     `json:"text" firestore:"text"`
	UpdatedAt *time.Time `json:"updatedAt" firestore:"updatedAt"`
	// SessionID is the session the text was learned from; empty when the
	// user wrote it. It goes when that session is purged.
	SessionID string `json:"sessionId,omitempty" firestore:"sessionId,omitempty"`
}

// Profile is a short picture of the user.
type Profile struct {
	Work     ProfileField `json:"work"`     // work context
	Personal ProfileField `json:"personal"` // personal context and preferences
	Focus    ProfileField `json:"focus"`    // current focus
}

func (p *Profile) fields() []struct {
	label string
	f     *ProfileField
} {
	return []struct {
		label string
		f     *ProfileField
	}{{"Work", &p.Work}, {"Personal", &p.Personal}, {"Current focus", &p.Focus}}
}

// TokenCounter counts the tokens of a text.
type TokenCounter interface {
	Text(model, s string) int
}

// blockTokens counts s for both encodings in use (o200k for the gpt-4o
// generation, cl100k for gpt-4 and gpt-3.5) and keeps the larger, so the
// block's cap holds whatever model a session uses.
func blockTokens(tok TokenCounter, s string) int {
	return max(tok.Text("gpt-4o", s), tok.Text("gpt-4", s))
}

// historyLines are the tiers of h that fit within limit tokens, newest
// tier first, one line each.
func historyLines(h *History, limit int, count func(string) int) []string {
	var lines []string
	for i, t := range []Tier{h.Recent, h.Months, h.Earlier} {
		if text := strings.TrimSpace(t.Text); text != "" {
			lines = append(lines, "- "+prompts.HistoryLabels[i]+": "+text)
		}
	}
	if len(lines) == 0 || limit <= 0 {
		return nil
	}
	_, _, kept := fitLines("", lines, limit, count)
	return lines[:kept]
}

// fitLines returns header with the longest prefix of lines (each on a line
// of its own) whose count is at most limit, that count, and how many lines
// it kept; "" if not even the header fits. Lines join with "\n", which may merge with neighbours in
// BPE, so only a count of the whole text is exact; counts grow as text is
// appended. Each line is counted once to estimate where the cut falls, and
// the whole text a few times to place it exactly, instead of the whole
// text once per line (quadratic in the block: 100 facts took ~0.3 s).
func fitLines(header string, lines []string, limit int, count func(string) int) (string, int, int) {
	n := count(header)
	if n > limit {
		return "", 0, 0
	}
	text := func(k int) string { return header + "\n" + strings.Join(lines[:k], "\n") }
	// k is where the estimate puts the cut; fits reports whether the first
	// k lines fit, counting each k once.
	k, est := 0, n
	for k < len(lines) {
		c := count("\n" + lines[k])
		if est+c > limit {
			break
		}
		est += c
		k++
	}
	counts := map[int]int{0: n}
	fits := func(k int) bool {
		if _, ok := counts[k]; !ok {
			counts[k] = count(text(k))
		}
		return counts[k] <= limit
	}
	for k > 0 && !fits(k) { // the estimate was short of merges that cost more
		k--
	}
	for k < len(lines) && fits(k+1) { // or it over-counted
		k++
	}
	if k == 0 {
		return header, n, 0
	}
	return text(k), counts[k], k
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// errDisabled and friends are outcomes of an extraction that are not failures.
var (
	ErrNothingToLearn = &errs.Error{Code: errs.EPRECONDITION, Message: "nothing to learn"}
	ErrBatchTaken     = &errs.Error{Code: errs.EPRECONDITION, Message: "another instance took this batch"}
	// ErrSourceGone is the answer of a save whose source session was
	// purged (or erased) meanwhile: what was learned from it is dropped.
	ErrSourceGone = &errs.Error{Code: errs.EPRECONDITION, Message: "the session learned from is gone"}
)
