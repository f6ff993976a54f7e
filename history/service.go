package history

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/sessions"
)

// Plan is the domain step of an append. A Store runs it inside the append's
// transaction with the session and its tail as stored and the batch already
// stored under the append's key (nil if none). It may change the session
// and the tail and returns the messages to write, or none to write nothing.
// It may run more than once and has no other effects.
type Plan func(s *sessions.Session, t *Tail, stored []Message) ([]Message, error)

// Appended is the outcome of an append: the session and tail as they are
// after it, and the messages (written now, or stored before under the key).
type Appended struct {
	Session  *sessions.Session
	Tail     *Tail
	Messages []Message
	Replayed bool // the batch had been stored before; nothing was written
}

// Store is the storage history needs. Implementations return *errs.Error
// values (ENOTFOUND for a missing session, EUNAVAILABLE when unreachable).
type Store interface {
	// Append atomically reads session sessionID (ENOTFOUND if missing), its
	// tail and, if key is set, the batch stored under key; calls plan; and
	// writes the session and tail with the messages plan returns, giving
	// them IDs. When plan returns none, nothing is written.
	Append(ctx context.Context, sessionID, key string, plan Plan) (*Appended, error)
	// ReadTail reads a session and its tail in one round trip.
	ReadTail(ctx context.Context, sessionID string) (*sessions.Session, *Tail, error)
	// UpdateTail reads the session and tail, calls fn and writes the tail,
	// and the session if fn changed it, atomically. An error from fn aborts
	// and is returned.
	UpdateTail(ctx context.Context, sessionID string, fn func(*sessions.Session, *Tail) error) error
	// SaveCompaction atomically stores record c (ECONFLICT if a record with
	// its ID exists), after fn accepted and updated the session and tail,
	// which are written too.
	SaveCompaction(ctx context.Context, sessionID string, c *Compaction, fn func(*sessions.Session, *Tail) error) error
	// ListCompactions returns a session's compaction records by EndSeq.
	ListCompactions(ctx context.Context, sessionID string) ([]Compaction, error)
	// ListMessages returns up to q.Limit messages ordered by seq.
	ListMessages(ctx context.Context, q ListQuery) ([]Message, error)
	// MessageRange returns the messages with from <= seq <= to, by seq.
	MessageRange(ctx context.Context, sessionID string, from, to int) ([]Message, error)
}

// ListQuery is one page of a session's messages.
type ListQuery struct {
	SessionID string
	Desc      bool // newest first
	Limit     int
	AfterSeq  *int // exclusive cursor in the query's order
	// Within, if set, keeps only the messages with From <= seq <= To.
	Within *sessions.Span
}

// Service reads and writes the messages of sessions. Its methods take a
// session that the caller obtained from sessions.Service, which checked that
// it belongs to the caller; appends check ownership again atomically.
type Service struct {
	Store  Store
	Tokens Counter
	Policy sessions.Policy
	Now    func() time.Time
	// MaxMessages caps the messages of one session (0: no cap), so that no
	// conversation grows without bound.
	MaxMessages int
	// DefaultBudget is the context budget of sessions without their own;
	// 0 means 75% of the model's context size, leaving room for the reply.
	DefaultBudget int
	// Summarizer folds old messages into a session's summary.
	Summarizer Summarizer
	// ContextSize returns a model's context size in tokens; nil:
	// history.ContextSize, the known models'..
	ContextSize func(model string) int
	// Feedback stores ratings of replies (see SetFeedback).
	Feedback FeedbackStore
}

// NewService returns a service with the default policy and the system clock.
func NewService(store Store, tokens Counter) *Service {
	return &Service{Store: store, Tokens: tokens, Policy: sessions.DefaultPolicy(), Now: time.Now}
}

// KeyedMessageID is the id of message i of the batch stored under key:
// deterministic, so a retry finds the batch by id rather than by a query,
// and derived under the server's secret, so nobody can tell it from key.
func KeyedMessageID(key string, i int) string {
	return "k" + ids.Derive(32, "message", key) + "-" + strconv.Itoa(i)
}

// KeyedReplyID is the id of the reply to the turn keyed key. Its prefix
// differs from KeyedMessageID's, so no client key can name a reply.
func KeyedReplyID(key string) string {
	return "r" + ids.Derive(32, "message", key)
}

// Order of a message page.
type Order string

const (
	OldestFirst Order = "asc"
	NewestFirst Order = "desc"
)

// PageRequest asks for one page of a session's messages.
type PageRequest struct {
	Order     Order // empty: oldest first
	Limit     int   // 0: paging.DefaultSize
	PageToken string
	// All lists every message of every branch, in the order written;
	// otherwise only the active branch is listed.
	All bool
}

// Page is one page of messages; NextPageToken is empty on the last.
type Page struct {
	Messages      []Message `json:"messages"`
	NextPageToken string    `json:"nextPageToken,omitempty"`
}

type pageToken struct {
	Session string `json:"s"`
	Order   Order  `json:"o"`
	Seq     int    `json:"q"`
	All     bool   `json:"a,omitempty"`
}

// Page returns a page of the messages of s, with a cursor to the next one.
func (svc *Service) Page(ctx context.Context, s *sessions.Session, req PageRequest) (*Page, error) {
	switch req.Order {
	case "":
		req.Order = OldestFirst
	case OldestFirst, NewestFirst:
	default:
		return nil, errs.Errorf(errs.EINVALID, "order must be asc or desc")
	}
	limit, err := paging.Limit(req.Limit)
	if err != nil {
		return nil, err
	}
	q := ListQuery{SessionID: s.ID, Desc: req.Order == NewestFirst, Limit: limit + 1}
	if req.PageToken != "" {
		var t pageToken
		if err := paging.Decode(req.PageToken, &t); err != nil {
			return nil, err
		}
		if t.Session != s.ID || t.Order != req.Order || t.Seq < 0 || t.All != req.All {
			return nil, errs.Errorf(errs.EINVALID, "pageToken does not belong to this query")
		}
		q.AfterSeq = &t.Seq
	}
	var msgs []Message
	if req.All || s.Branches == nil {
		msgs, err = svc.Store.ListMessages(ctx, q)
	} else {
		msgs, err = svc.listPath(ctx, s.Path(), q)
	}
	if err != nil {
		return nil, err
	}
	p := &Page{Messages: msgs}
	if len(msgs) > limit {
		p.Messages = msgs[:limit]
		p.NextPageToken = paging.Encode(pageToken{Session: s.ID, Order: req.Order, Seq: p.Messages[limit-1].Seq, All: req.All})
	}
	siblingsOf(s, p.Messages)
	if p.Messages == nil {
		p.Messages = []Message{}
	}
	return p, nil
}

// listPath answers q for the messages on path only: a query per span of
// the path, in q's order, until q.Limit are found. A path's seqs increase
// along it, so q's seq cursor works as for the whole session.
// MessagesAt reads the messages of session sessionID at seqs (those
// stored), one query each, side by side: the other versions of messages a
// page shows, which the page does not hold.
func (svc *Service) MessagesAt(ctx context.Context, sessionID string, seqs []int) ([]Message, error) {
	found := make([][]Message, len(seqs))
	failed := make([]error, len(seqs))
	parallel.Each(len(seqs), 8, func(i int) {
		found[i], failed[i] = svc.Store.MessageRange(ctx, sessionID, seqs[i], seqs[i])
	})
	if err := errors.Join(failed...); err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

func (svc *Service) listPath(ctx context.Context, path sessions.Path, q ListQuery) ([]Message, error) {
	spans := slices.Clone(path)
	if q.Desc {
		slices.Reverse(spans)
	}
	var out []Message
	for _, span := range spans {
		if q.AfterSeq != nil && (!q.Desc && span.To <= *q.AfterSeq || q.Desc && span.From >= *q.AfterSeq) {
			continue // wholly before the cursor
		}
		sq := q
		sq.Within, sq.Limit = &span, q.Limit-len(out)
		msgs, err := svc.Store.ListMessages(ctx, sq)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
		if len(out) >= q.Limit {
			break
		}
	}
	return out, nil
}
