// Package recall finds what was said: each unit of search of a conversation (a
// question and its reply) is embedded once, after the reply is stored,
// and kept beside its session, so that a user can search all of their
// sessions by meaning and by exact phrase. The vectors are derived data:
// they go with their messages when a session is purged or an account
// erased, and are never shown to clients.
package recall

import (
	"context"
	"time"

	"github.com/chatmemory/backend/kernel/vector"
	"github.com/chatmemory/backend/sessions"
)

// MaxDimensions is the longest vector Firestore can search (and index).
const MaxDimensions = 2048

// Embedder turns texts into unit vectors of one length, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the embeddings it makes (stored with each, so that a
	// change of model or length can be told apart).
	Model() string
}

// Unit is a unit of search as stored (its UnitMessages, embedded): what
// search ranks and recall puts in a context, usually one question and its
// reply. A message with no partner (a
// session's opening reply, a question left unanswered, a reply appended
// apart from its question) is a unit of its own: a Unit with only
// Reply (an assistant's message) or only Question (a user's) set; a tool
// round's results are in Tools, with the answer given after them as Reply
// if there is one. It carries the start of its messages, so that a turn's
// recall and a search read no messages (see MaxExcerptChars), and their
// words for the lexical leg (Bag).
type Unit struct {
	UserID, SessionID string
	// SessionTitle is its session's title (the store sets it from the
	// session it checks, and changes it with the session's), so that a
	// search and a recall from all sessions need not read them; "" in a
	// unit stored before units carried it.
	SessionTitle    string
	Question, Reply Excerpt
	Tools           []Excerpt // tool results, when the unit is a tool round's
	Model           string
	Vector          []float32
	Bag             Bag
}

// ID is the unit's id: its reply's, else its question's, else its first
// tool result's (see UnitMessages).
func (e Unit) ID() string {
	switch {
	case e.Reply.ID != "":
		return e.Reply.ID
	case e.Question.ID != "":
		return e.Question.ID
	case len(e.Tools) > 0:
		return e.Tools[0].ID
	}
	return ""
}

// Excerpt is a message as a unit keeps it.
type Excerpt struct {
	ID        string
	Seq       int
	Content   string // the message's first MaxExcerptChars bytes (whole runes)
	Clipped   bool   // Content is not all of it
	CreatedAt time.Time
}

// MaxExcerptChars bounds each message's text kept with its unit (in
// bytes): an exact phrase is found in, and a recalled excerpt shown from,
// the start of a message. Two of them and a vector stay far from
// Firestore's 1 MiB per document.
const MaxExcerptChars = 4000

// Hit is a unit a search found.
type Hit struct {
	Unit     Unit
	Distance float64           // cosine distance: 0 is the same direction
	Session  *sessions.Session // as stored now (set when retrieval reads it: for a unit that lacks its title; nil if gone)
}

// Query asks for the units of UserID nearest to Vector: at most K, in
// SessionID only if it is set.
type Query struct {
	UserID, SessionID string
	Vector            []float32
	K                 int
}

// Store keeps units and finds the nearest.
type Store interface {
	// SaveUnit stores e, unless its session is gone or deleted
	// (sessions.NotFound then: a unit never outlives its session),
	// with its session's title; saving the same unit again replaces it.
	SaveUnit(ctx context.Context, e Unit) error
	// Nearest returns the units q asks for, nearest first.
	Nearest(ctx context.Context, q Query) ([]Hit, error)
	// CountUnits counts the units stored for userID.
	CountUnits(ctx context.Context, userID string) (int, error)
	// Lexical returns, for each of q's terms, up to q.PerTerm of q.UserID's
	// units (in q.SessionID only if set) whose bag holds it, with their
	// bags, and their sessions when q asks; a unit found by several terms
	// comes once.
	Lexical(ctx context.Context, q LexicalQuery) (LexicalHits, error)
	// Visibility reads what userID's sessions tell of themselves to a
	// retrieval (one read).
	Visibility(ctx context.Context, userID string) (Visibility, error)
	// SessionsOf reads sessions by id in one batched read (one that is
	// gone is left out).
	SessionsOf(ctx context.Context, ids []string) (map[string]*sessions.Session, error)
}

// LexicalQuery asks for the units that hold any of Terms: up to PerTerm
// for each term (one query a term, all at once: a word said once is
// always among them), or, with Any set, up to PerTerm in all (one query
// for any of the terms: cheaper, but a rare word's unit may be left out
// when common words fill the page).
type LexicalQuery struct {
	UserID, SessionID string
	Terms             []string
	PerTerm           int
	Any               bool
}

// LexicalHits are what a lexical query found: the units, and for each term
// how many of them hold it (PerTerm at most: the rest were not read; fewer
// than PerTerm is how many of the user's units, in the query's session if
// it named one, hold it in all).
type LexicalHits struct {
	Hits  []Hit
	Found map[string]int
}

// Cosine is the cosine distance of two vectors (see vector.Cosine).
func Cosine(a, b []float32) float64 { return vector.Cosine(a, b) }

// Visibility is what a user's sessions tell of themselves to a retrieval
// that reads none of them: the ids of the deleted and of the archived
// ones, and the messages off each branched session's active branch (see
// sessions.OffPath). A store keeps it current in the same commit as every
// change of a session's status or branch.
type Visibility struct {
	Deleted, Archived []string
	OffPath           map[string]sessions.Path
}
