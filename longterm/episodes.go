package longterm

import (
	"slices"
	"strings"
	"time"
)

// A user's episodic history is what they did over time, in three tiers of
// short text: the last 30 days in some detail, 1 to 6 months ago
// compressed, and earlier as background. It is built from what sessions
// already say about themselves (their titles and summaries), never from
// their messages, and rolled forward by RollUp on the daily schedule: a
// session active in the last 30 days is an episode of the recent tier; once
// its last activity is older, it moves into the note of its calendar month
// (which the model compresses); once that month is more than six months
// past, the note moves into the background (which the model compresses
// again). Each tier keeps the material its text was made from and the
// sessions behind it, so that a purged session's contribution leaves: its
// episode goes and the text is made again from what is left (a background
// note, whose episodes are gone, goes whole).

// History is a user's episodic history: the three tiers the user sees and
// the model is shown, and the material they are made from.
type History struct {
	Recent  Tier `json:"recent" firestore:"recent"`
	Months  Tier `json:"months" firestore:"months"`
	Earlier Tier `json:"earlier" firestore:"earlier"`
	// Episodes are the sessions active in the last 30 days, newest first.
	Episodes []Episode `json:"episodes" firestore:"episodes"`
	// Notes are the months 1 to 6 months past, newest first: each with
	// its episodes and the line the model made of them.
	Notes []MonthNote `json:"notes" firestore:"notes"`
	// Background are older months' notes (without their episodes), newest
	// first, which Earlier compresses.
	Background []MonthNote `json:"background" firestore:"background"`
	// RolledUpAt is when the last roll-up looked at the user's sessions.
	RolledUpAt time.Time `json:"rolledUpAt" firestore:"rolledUpAt"`
	// Prompts is the version of the prompts the texts were made with.
	Prompts string `json:"prompts,omitempty" firestore:"prompts"`
	// EarlierStale marks a background whose notes changed since Earlier
	// was made.
	EarlierStale bool `json:"-" firestore:"earlierStale"`
}

// Clone returns a copy of h that can be changed without changing h.
func (h History) Clone() History {
	c := h
	c.Episodes = slices.Clone(h.Episodes)
	c.Notes = make([]MonthNote, len(h.Notes))
	for i, n := range h.Notes {
		n.Episodes = slices.Clone(n.Episodes)
		n.Sessions = slices.Clone(n.Sessions)
		c.Notes[i] = n
	}
	c.Background = slices.Clone(h.Background)
	for _, t := range []*Tier{&c.Recent, &c.Months, &c.Earlier} {
		t.Sessions = slices.Clone(t.Sessions)
	}
	return c
}

// DueAt is when h next has something to move: its oldest episode leaving
// the last 30 days, or its oldest month note leaving the middle tier; now
// if a text is still to be made (the model failed last time); zero if
// nothing is held.
func (h *History) DueAt(now time.Time) time.Time {
	if h.stale() {
		return now
	}
	var due time.Time
	earliest := func(t time.Time) {
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	for _, e := range h.Episodes {
		earliest(e.At.Add(recentDays * 24 * time.Hour))
	}
	for _, n := range h.Notes {
		if m, err := time.Parse("2006-01", n.Month); err == nil {
			earliest(m.AddDate(0, monthsKept+1, 0))
		}
	}
	return due
}

// ageOut moves episodes older than the recent tier into their months'
// notes, and notes older than the middle tier into the background, as of
// now. It reports what changed.
func (h *History) ageOut(now time.Time) (changed bool) {
	cutoff := now.Add(-recentDays * 24 * time.Hour)
	kept := h.Episodes[:0:0]
	for _, e := range h.Episodes {
		if e.At.After(cutoff) {
			kept = append(kept, e)
			continue
		}
		h.noteFor(monthOf(e.At)).add(e)
		changed = true
	}
	h.Episodes = kept
	oldest := monthOf(now.AddDate(0, -monthsKept, 0))
	notes := h.Notes[:0:0]
	for _, n := range h.Notes {
		if n.Month >= oldest {
			notes = append(notes, n)
			continue
		}
		if n.Text != "" { // a note with no text yet has nothing to give the background
			h.Background = append(h.Background, MonthNote{Month: n.Month, Text: n.Text, Sessions: n.Sessions})
			h.EarlierStale = true
		}
		changed = true
	}
	h.Notes = notes
	slices.SortFunc(h.Background, func(a, b MonthNote) int { return strings.Compare(b.Month, a.Month) })
	if len(h.Background) > maxBackground {
		h.Background = h.Background[:maxBackground] // the oldest fade: Earlier is made again without them
		h.EarlierStale = true
	}
	return changed
}

// see records session activity: the session's episode in the recent tier
// (moved there from a month's note if it was active again).
func (h *History) see(e Episode) {
	for i := range h.Notes {
		before := len(h.Notes[i].Episodes)
		h.Notes[i].Episodes = slices.DeleteFunc(h.Notes[i].Episodes, func(x Episode) bool { return x.SessionID == e.SessionID })
		if len(h.Notes[i].Episodes) != before {
			h.Notes[i].Stale = true
		}
	}
	h.Episodes = slices.DeleteFunc(h.Episodes, func(x Episode) bool { return x.SessionID == e.SessionID })
	h.Episodes = append(h.Episodes, e)
	slices.SortFunc(h.Episodes, func(a, b Episode) int { return b.At.Compare(a.At) })
	if len(h.Episodes) > maxEpisodes {
		for _, old := range h.Episodes[maxEpisodes:] { // the oldest leave for their months early
			h.noteFor(monthOf(old.At)).add(old)
		}
		h.Episodes = h.Episodes[:maxEpisodes]
	}
}

// Tier is one tier of the history.
type Tier struct {
	Text      string     `json:"text" firestore:"text"`
	UpdatedAt *time.Time `json:"updatedAt" firestore:"updatedAt"`
	// Edited marks text the user wrote: roll-ups leave it as it is.
	Edited bool `json:"edited" firestore:"edited"`
	// Sessions are the sessions the text was made from.
	Sessions []string `json:"sessions" firestore:"sessions"`
}

// Episode is one session as the history sees it.
type Episode struct {
	SessionID string    `json:"sessionId" firestore:"sessionId"`
	Title     string    `json:"title" firestore:"title"`
	Summary   string    `json:"summary,omitempty" firestore:"summary,omitempty"`
	At        time.Time `json:"at" firestore:"at"` // its last activity
}

// MonthNote is one calendar month of the history.
type MonthNote struct {
	Month    string    `json:"month" firestore:"month"` // 2026-09
	Text     string    `json:"text" firestore:"text"`
	Episodes []Episode `json:"episodes,omitempty" firestore:"episodes,omitempty"`
	Sessions []string  `json:"sessions" firestore:"sessions"`
	// Stale marks a note whose episodes changed since its text was made.
	Stale bool `json:"-" firestore:"stale"`
}

// Bounds of the history, so that it stays a small part of the user's
// memory document.
const (
	recentDays      = 30
	monthsKept      = 6  // months in the middle tier
	maxEpisodes     = 40 // episodes in the recent tier
	maxNoteEpisodes = 25 // episodes kept per month note
	maxBackground   = 24 // month notes in the background
	maxTitle        = 100
	maxEpisodeText  = 240 // characters of a session's summary an episode keeps
	maxRecentText   = 900
	MaxNoteText     = 200 // characters of one month's note
	maxMonthsText   = 800
	MaxEarlierText  = 600
)

// monthOf is t's calendar month, as notes name it.
func monthOf(t time.Time) string { return t.UTC().Format("2006-01") }

// noteFor is the note of month, added if there is none.
func (h *History) noteFor(month string) *MonthNote {
	for i := range h.Notes {
		if h.Notes[i].Month == month {
			return &h.Notes[i]
		}
	}
	h.Notes = append(h.Notes, MonthNote{Month: month})
	slices.SortFunc(h.Notes, func(a, b MonthNote) int { return strings.Compare(b.Month, a.Month) })
	return h.noteFor(month)
}

// add puts e in the note (replacing the session's earlier episode), newest
// first, within the note's bound, and marks the note stale.
func (n *MonthNote) add(e Episode) {
	n.Episodes = slices.DeleteFunc(n.Episodes, func(x Episode) bool { return x.SessionID == e.SessionID })
	n.Episodes = append(n.Episodes, e)
	slices.SortFunc(n.Episodes, func(a, b Episode) int { return b.At.Compare(a.At) })
	if len(n.Episodes) > maxNoteEpisodes {
		n.Episodes = n.Episodes[:maxNoteEpisodes]
	}
	n.Stale = true
}

// forget removes session id's contribution: its episode, and a background
// note made with it. It reports whether anything changed.
func (h *History) forget(id string) bool {
	changed := false
	drop := func(eps []Episode) []Episode {
		out := slices.DeleteFunc(slices.Clone(eps), func(e Episode) bool { return e.SessionID == id })
		changed = changed || len(out) != len(eps)
		return out
	}
	h.Episodes = drop(h.Episodes)
	for i := range h.Notes {
		n := len(h.Notes[i].Episodes)
		h.Notes[i].Episodes = drop(h.Notes[i].Episodes)
		if len(h.Notes[i].Episodes) != n || slices.Contains(h.Notes[i].Sessions, id) {
			h.Notes[i].Stale, h.Notes[i].Text = true, "" // made again without it
			changed = true
		}
	}
	bg := len(h.Background)
	h.Background = slices.DeleteFunc(slices.Clone(h.Background), func(n MonthNote) bool { return slices.Contains(n.Sessions, id) })
	if len(h.Background) != bg {
		h.EarlierStale, changed = true, true
	}
	for _, t := range []*Tier{&h.Recent, &h.Months, &h.Earlier} {
		if slices.Contains(t.Sessions, id) {
			*t = Tier{} // made again from what is left
			changed = true
		}
	}
	if h.Earlier.Text == "" && len(h.Background) > 0 {
		h.EarlierStale = true
	}
	return changed
}
