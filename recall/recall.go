// Package recall finds what was said: each exchange of a conversation (a
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

// Exchange is one question and its reply, embedded: the unit of recall.
// Its id is the reply's. It carries the start of both messages, so that a
// turn's recall and a search read no messages (see MaxExcerptChars).
type Exchange struct {
	UserID, SessionID string
	// SessionTitle is its session's title when it was stored (the store
	// sets it from the session it checks), so that a recall from all
	// sessions need not read them.
	SessionTitle    string
	Question, Reply Excerpt
	Model           string
	Vector          []float32
}

// Excerpt is a message as an exchange keeps it.
type Excerpt struct {
	ID        string
	Seq       int
	Content   string // the message's first MaxExcerptChars bytes (whole runes)
	Clipped   bool   // Content is not all of it
	CreatedAt time.Time
}

// MaxExcerptChars bounds each message's text kept with its exchange (in
// bytes): an exact phrase is found in, and a recalled excerpt shown from,
// the start of a message. Two of them and a vector stay far from
// Firestore's 1 MiB per document.
const MaxExcerptChars = 4000

// Hit is an exchange a search found.
type Hit struct {
	Exchange Exchange
	Distance float64           // cosine distance: 0 is the same direction
	Session  *sessions.Session // as stored now (when asked for; nil if gone)
}

// Query asks for the exchanges of UserID nearest to Vector: at most K, in
// SessionID only if it is set.
type Query struct {
	UserID, SessionID string
	Vector            []float32
	K                 int
	// Sessions asks for each hit's session too (one batched read after
	// the vector query).
	Sessions bool
}

// Store keeps exchanges and finds the nearest.
type Store interface {
	// SaveExchange stores e, unless its session is gone or deleted
	// (sessions.NotFound then: an exchange never outlives its session),
	// with its session's title; saving the same exchange again replaces it.
	SaveExchange(ctx context.Context, e Exchange) error
	// Nearest returns the exchanges q asks for, nearest first.
	Nearest(ctx context.Context, q Query) ([]Hit, error)
	// CountExchanges counts the exchanges stored for userID.
	CountExchanges(ctx context.Context, userID string) (int, error)
}

// Cosine is the cosine distance of two vectors (see vector.Cosine).
func Cosine(a, b []float32) float64 { return vector.Cosine(a, b) }
