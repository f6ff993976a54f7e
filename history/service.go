package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// Plan is the domain step of an append. A Repo runs it inside the append's
// transaction with the session as stored and the batch already stored under
// the append's key (nil if none). It may change the session and returns the
// messages to write, or none to write nothing. It may run more than once
// and has no other effects.
type Plan func(s *sessions.Session, stored []Message) ([]Message, error)

// Repo is the storage history needs. Implementations return *sessions.Error
// values (ENOTFOUND for a missing session, EUNAVAILABLE when unreachable).
type Repo interface {
	// Append atomically reads session sessionID (ENOTFOUND if missing) and,
	// if key is set, the batch stored under key; calls plan; and writes the
	// session with the messages plan returns, giving them IDs. It returns
	// the written messages, or the stored batch when plan wrote none.
	Append(ctx context.Context, sessionID, key string, plan Plan) ([]Message, error)
	// ListMessages returns up to q.Limit messages ordered by seq.
	ListMessages(ctx context.Context, q ListQuery) ([]Message, error)
	// MessageRange returns the messages with from <= seq <= to, by seq.
	MessageRange(ctx context.Context, sessionID string, from, to int) ([]Message, error)
	// FindBatch returns the batch stored under key, or nil if there is none.
	FindBatch(ctx context.Context, sessionID, key string) ([]Message, error)
}

// ListQuery is one page of a session's messages.
type ListQuery struct {
	SessionID string
	Desc      bool // newest first
	Limit     int
	AfterSeq  *int // exclusive cursor in the query's order
}

// Service reads and writes the messages of sessions. Its methods take a
// session that the caller obtained from sessions.Service, which checked that
// it belongs to the caller; appends check ownership again atomically.
type Service struct {
	Repo   Repo
	Tokens Counter
	Policy sessions.Policy
	Now    func() time.Time
	// MaxMessages caps the messages of one session (0: no cap), so that no
	// conversation grows without bound.
	MaxMessages int
}

// NewService returns a service with the default policy and the system clock.
func NewService(repo Repo, tokens Counter) *Service {
	return &Service{Repo: repo, Tokens: tokens, Policy: sessions.DefaultPolicy(), Now: time.Now}
}

// Append stores drafts as the next messages of s, atomically and in order,
// together with the session's counters. With a key (the client's message id)
// a retry returns the batch stored the first time and writes nothing; the
// same key with other messages is ECONFLICT.
func (svc *Service) Append(ctx context.Context, s *sessions.Session, key string, drafts ...Draft) ([]Message, error) {
	if err := validateBatch(key, drafts); err != nil {
		return nil, err
	}
	now := sessions.Clock(svc.Now)
	msgs := make([]Message, len(drafts))
	total := 0
	for i, d := range drafts {
		m := Message{
			SessionID:       s.ID,
			UserID:          s.UserID,
			Role:            d.Role,
			Content:         d.Content,
			Name:            d.Name,
			ToolCalls:       d.ToolCalls,
			ToolCallID:      d.ToolCallID,
			CreatedAt:       now,
			ClientMessageID: key,
			Metadata:        d.Metadata,
		}
		m.Tokens = svc.Tokens.Count(s.Model, &m)
		total += m.Tokens
		msgs[i] = m
	}
	userID := s.UserID
	return svc.Repo.Append(ctx, s.ID, key, func(cur *sessions.Session, stored []Message) ([]Message, error) {
		if err := cur.CheckOwner(userID); err != nil {
			return nil, err
		}
		if stored != nil {
			if !sameBatch(stored, drafts) {
				return nil, sessions.Errorf(sessions.ECONFLICT, "clientMessageId %q was already used for other messages", key)
			}
			return nil, nil
		}
		if err := cur.CheckWritable(); err != nil {
			return nil, err
		}
		if svc.MaxMessages > 0 && cur.MessageCount+len(msgs) > svc.MaxMessages {
			return nil, sessions.Errorf(sessions.ETOOLARGE, "the session has reached its limit of %d messages; start a new session", svc.MaxMessages)
		}
		open, err := toolSequence(cur.PendingToolCalls, msgs)
		if err != nil {
			return nil, err
		}
		out := make([]Message, len(msgs))
		for i, m := range msgs {
			m.Seq = cur.NextSeq + i
			out[i] = m
		}
		cur.NextSeq += len(out)
		cur.MessageCount += len(out)
		cur.TokenCount += total
		cur.PendingToolCalls = open
		cur.Touch(now, svc.Policy)
		return out, nil
	})
}

func sameBatch(stored []Message, drafts []Draft) bool {
	if len(stored) != len(drafts) {
		return false
	}
	for i := range stored {
		if !stored[i].sameContent(&drafts[i]) {
			return false
		}
	}
	return true
}

// Find returns the batch appended to s under key, or nil if there is none.
func (svc *Service) Find(ctx context.Context, s *sessions.Session, key string) ([]Message, error) {
	if !idRE.MatchString(key) {
		return nil, sessions.Errorf(sessions.EINVALID, "clientMessageId must be 1 to %d printable characters", MaxKeyLen)
	}
	return svc.Repo.FindBatch(ctx, s.ID, key)
}

// KeyDocID is the document id of message i of the batch stored under key:
// deterministic, so a retry finds the batch by id rather than by a query.
func KeyDocID(key string, i int) string {
	h := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(h[:16]) + "-" + strconv.Itoa(i)
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
	Limit     int   // 0: sessions.DefaultPageSize
	PageToken string
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
}

// Page returns a page of the messages of s, with a cursor to the next one.
func (svc *Service) Page(ctx context.Context, s *sessions.Session, req PageRequest) (*Page, error) {
	switch req.Order {
	case "":
		req.Order = OldestFirst
	case OldestFirst, NewestFirst:
	default:
		return nil, sessions.Errorf(sessions.EINVALID, "order must be asc or desc")
	}
	limit, err := sessions.PageLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	q := ListQuery{SessionID: s.ID, Desc: req.Order == NewestFirst, Limit: limit + 1}
	if req.PageToken != "" {
		var t pageToken
		if err := sessions.DecodeToken(req.PageToken, &t); err != nil {
			return nil, err
		}
		if t.Session != s.ID || t.Order != req.Order || t.Seq < 0 {
			return nil, sessions.Errorf(sessions.EINVALID, "pageToken does not belong to this query")
		}
		q.AfterSeq = &t.Seq
	}
	msgs, err := svc.Repo.ListMessages(ctx, q)
	if err != nil {
		return nil, err
	}
	p := &Page{Messages: msgs}
	if len(msgs) > limit {
		p.Messages = msgs[:limit]
		p.NextPageToken = sessions.EncodeToken(pageToken{Session: s.ID, Order: req.Order, Seq: p.Messages[limit-1].Seq})
	}
	if p.Messages == nil {
		p.Messages = []Message{}
	}
	return p, nil
}

// MaxRange is the most messages one Range call returns.
const MaxRange = 1000

// Range returns the messages of s with from <= seq <= to.
func (svc *Service) Range(ctx context.Context, s *sessions.Session, from, to int) ([]Message, error) {
	if from < 0 || to < from || to-from >= MaxRange {
		return nil, sessions.Errorf(sessions.EINVALID, "a range needs 0 <= from <= to and at most %d messages", MaxRange)
	}
	return svc.Repo.MessageRange(ctx, s.ID, from, to)
}
