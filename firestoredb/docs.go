package firestoredb

import (
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// The documents below are what the domain types look like in Firestore.
// A stored struct is kept only where the document differs from its domain
// type: fields the domain does not show (userId on every child document,
// leases), names kept from earlier versions ("memory" for a session's
// context settings), or a different shape (tool calls stored flat). Small
// value types stored exactly as they are (sessions.Metadata,
// sessions.ContextSettings, sessions.Branches, history.MessageMetadata,
// longterm.Source, longterm.ProfileField) are stored directly, under their
// firestore tags: inert names, so the domain still imports nothing of
// Firestore.

// sessionDoc is chat_sessions/{id} as stored.
type sessionDoc struct {
	UserID         string     `firestore:"userId"`
	Title          string     `firestore:"title"`
	TitleSource    string     `firestore:"titleSource"`
	Model          string     `firestore:"model"`
	Status         string     `firestore:"status"`
	CreatedAt      time.Time  `firestore:"createdAt"`
	UpdatedAt      time.Time  `firestore:"updatedAt"`
	LastActivityAt time.Time  `firestore:"lastActivityAt"`
	ArchivedAt     *time.Time `firestore:"archivedAt"`
	DeletedAt      *time.Time `firestore:"deletedAt"`
	ExpiresAt      time.Time  `firestore:"expiresAt"`
	MessageCount   int        `firestore:"messageCount"`
	TokenCount     int        `firestore:"tokenCount"`
	NextSeq        int        `firestore:"nextSeq"`
	RetentionDays  int        `firestore:"retentionDays"`
	// Message retention: the session's own period, the seq its history
	// starts from, and when its oldest message was written and falls due
	// under its own period (null without one), which the sweep queries.
	MessageRetentionDays int                      `firestore:"messageRetentionDays"`
	HistoryFrom          int                      `firestore:"historyFrom"`
	HistoryStartAt       *time.Time               `firestore:"historyStartAt"`
	HistoryExpiresAt     *time.Time               `firestore:"historyExpiresAt"`
	Summary              string                   `firestore:"summary"`
	SummaryUpdatedAt     *time.Time               `firestore:"summaryUpdatedAt"`
	Metadata             sessions.Metadata        `firestore:"metadata"`
	Context              sessions.ContextSettings `firestore:"memory"`
	Usage                sessions.Usage           `firestore:"usage"`
	Feedback             sessions.FeedbackCounts  `firestore:"feedback"`
	NoLearning           bool                     `firestore:"noLearning"`
	Instructions         string                   `firestore:"instructions,omitempty"`
	LearnFrom            int                      `firestore:"learnFrom"`
	PendingToolCalls     []string                 `firestore:"pendingToolCalls"`
	// Branches is the session's tree: a fork is two small numbers, and
	// their count is capped.
	Branches *sessions.Branches `firestore:"branches,omitempty"`
	// Answering is the lease of the turn answering a message, while one does.
	Answering *sessions.Answering `firestore:"answering,omitempty"`
	// TailNext is read only: a turn writes and clears it by itself (see
	// tailNextDoc), and no session write sends it.
	TailNext *tailNextDoc `firestore:"tailNext,omitempty"`
	// ContextRev is read only too: every write of the session's context
	// sets it anew (see fenceContext), and no session write sends it.
	ContextRev string `firestore:"contextRev,omitempty"`
}

func toSessionDoc(s *sessions.Session) *sessionDoc {
	return &sessionDoc{
		UserID: s.UserID, Title: s.Title, TitleSource: string(s.TitleSource), Model: s.Model,
		Status: string(s.Status), CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		LastActivityAt: s.LastActivityAt, ArchivedAt: s.ArchivedAt, DeletedAt: s.DeletedAt,
		ExpiresAt: s.ExpiresAt, MessageCount: s.MessageCount, TokenCount: s.TokenCount,
		NextSeq: s.NextSeq, RetentionDays: s.RetentionDays, Summary: s.Bookkeeping.Summary,
		SummaryUpdatedAt: s.Bookkeeping.SummaryUpdatedAt, PendingToolCalls: s.Bookkeeping.PendingToolCalls,
		Metadata: s.Metadata, Context: s.Context, Usage: s.Usage, Feedback: s.Feedback,
		NoLearning: s.NoLearning, Instructions: s.Instructions, LearnFrom: s.Bookkeeping.LearnFrom, Branches: s.Branches, Answering: s.Bookkeeping.Answering,
		MessageRetentionDays: s.MessageRetentionDays, HistoryFrom: s.Bookkeeping.HistoryFrom,
		HistoryStartAt: orNull(s.Bookkeeping.HistoryStartAt), HistoryExpiresAt: orNull(s.HistoryExpiresAt()),
	}
}

// orNull stores a zero time as null, which range queries on it skip.
func orNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func decodeSession(snap *firestore.DocumentSnapshot) (*sessions.Session, error) {
	s, _, err := decodeSessionDoc(snap)
	return s, err
}

// decodeSessionDoc decodes a session document, and returns it as stored
// too.
func decodeSessionDoc(snap *firestore.DocumentSnapshot) (*sessions.Session, *sessionDoc, error) {
	var d sessionDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	s := &sessions.Session{
		ID: snap.Ref.ID, UserID: d.UserID, Title: d.Title, TitleSource: sessions.TitleSource(d.TitleSource),
		Model: d.Model, Status: sessions.Status(d.Status), CreatedAt: d.CreatedAt.UTC(),
		UpdatedAt: d.UpdatedAt.UTC(), LastActivityAt: d.LastActivityAt.UTC(),
		ArchivedAt: utc(d.ArchivedAt), DeletedAt: utc(d.DeletedAt), ExpiresAt: d.ExpiresAt.UTC(),
		MessageCount: d.MessageCount, TokenCount: d.TokenCount, NextSeq: d.NextSeq,
		RetentionDays: d.RetentionDays, Metadata: d.Metadata, Context: d.Context, Usage: d.Usage, Feedback: d.Feedback,
		NoLearning: d.NoLearning, Instructions: d.Instructions, Branches: d.Branches, MessageRetentionDays: d.MessageRetentionDays,
		Bookkeeping: sessions.Bookkeeping{HistoryFrom: d.HistoryFrom, Summary: d.Summary, SummaryUpdatedAt: utc(d.SummaryUpdatedAt),
			LearnFrom: d.LearnFrom, PendingToolCalls: d.PendingToolCalls, Answering: answeringUTC(d.Answering)},
	}
	if d.HistoryStartAt != nil {
		s.Bookkeeping.HistoryStartAt = d.HistoryStartAt.UTC()
	}
	return s, &d, nil
}

func answeringUTC(a *sessions.Answering) *sessions.Answering {
	if a != nil {
		a.Until = a.Until.UTC()
	}
	return a
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type toolCallDoc struct {
	ID        string `firestore:"id"`
	Type      string `firestore:"type"`
	Name      string `firestore:"name"`
	Arguments string `firestore:"arguments"`
}

func toMessageDoc(m *history.Message, batchSize int) *messageDoc {
	var op *sessions.Operation
	if m.Op.Kind != "" {
		op = &m.Op
	}
	return &messageDoc{
		UserID: m.UserID, msgFields: toMsgFields(m), ClientMessageID: m.ClientMessageID, BatchSize: batchSize, Op: op,
		Metadata: m.Metadata, Feedback: m.Feedback,
	}
}

// messageDoc is chat_sessions/{sid}/messages/{id} as stored. It carries the
// owner's userId so that security rules need no get() of the session, and
// erasure can find every message of a user.
type messageDoc struct {
	UserID string `firestore:"userId"`
	msgFields
	ClientMessageID string                  `firestore:"clientMessageId,omitempty"`
	BatchSize       int                     `firestore:"batchSize,omitempty"` // on keyed batches: how many messages share the key
	Metadata        history.MessageMetadata `firestore:"metadata"`
	Op              *sessions.Operation     `firestore:"op,omitempty"` // on a keyed turn's messages: what the key named
	Feedback        *history.Feedback       `firestore:"feedback,omitempty"`
}

// msgFields are what a message document and its copy in a tail share.
type msgFields struct {
	Seq int `firestore:"seq"`
	// ParentSeq is stored for every message since branches exist; a
	// message stored before has none and follows the one before it.
	ParentSeq  *int          `firestore:"parentSeq,omitempty"`
	Role       string        `firestore:"role"`
	Content    string        `firestore:"content"`
	Name       string        `firestore:"name,omitempty"`
	ToolCalls  []toolCallDoc `firestore:"toolCalls,omitempty"`
	ToolCallID string        `firestore:"toolCallId,omitempty"`
	CreatedAt  time.Time     `firestore:"createdAt"`
	Tokens     int           `firestore:"tokens"`
	// Attachments are the files a user's message carries (their records'
	// ids and what the message keeps of them).
	Attachments []history.Part `firestore:"attachments,omitempty"`
}

func toMsgFields(m *history.Message) msgFields {
	parent := m.ParentSeq
	return msgFields{Seq: m.Seq, ParentSeq: &parent, Role: string(m.Role), Content: m.Content, Name: m.Name,
		ToolCalls: toToolCallDocs(m.ToolCalls), ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt, Tokens: m.Tokens,
		Attachments: m.Attachments}
}

func decodeMessage(snap *firestore.DocumentSnapshot) (history.Message, int, error) {
	var d messageDoc
	if err := snap.DataTo(&d); err != nil {
		return history.Message{}, 0, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	m := d.message(snap.Ref.ID, snap.Ref.Parent.Parent.ID)
	m.UserID, m.ClientMessageID = d.UserID, d.ClientMessageID
	if d.Op != nil {
		m.Op = *d.Op
	}
	m.Metadata, m.Feedback = d.Metadata, feedbackUTC(d.Feedback)
	return m, d.BatchSize, nil
}

// message returns the message these fields describe.
func (f *msgFields) message(id, sessionID string) history.Message {
	parent := f.Seq - 1
	if f.ParentSeq != nil {
		parent = *f.ParentSeq
	}
	return history.Message{ID: id, SessionID: sessionID, Seq: f.Seq, ParentSeq: parent, Role: history.Role(f.Role), Content: f.Content,
		Name: f.Name, ToolCalls: fromToolCallDocs(f.ToolCalls), ToolCallID: f.ToolCallID, CreatedAt: f.CreatedAt.UTC(), Tokens: f.Tokens,
		Attachments: f.Attachments}
}

// compactionDoc is chat_sessions/{sid}/compactions/{id}, and the copy of
// the one in use inside the tail.
type compactionDoc struct {
	UserID    string    `firestore:"userId"`
	StartSeq  int       `firestore:"startSeq"`
	EndSeq    int       `firestore:"endSeq"`
	Summary   string    `firestore:"summary"`
	Tokens    int       `firestore:"tokens"`
	Model     string    `firestore:"model"`
	CreatedAt time.Time `firestore:"createdAt"`
}

func toToolCallDocs(calls []history.ToolCall) []toolCallDoc {
	var out []toolCallDoc
	for _, c := range calls {
		out = append(out, toolCallDoc{ID: c.ID, Type: c.Type, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out
}

func fromToolCallDocs(docs []toolCallDoc) []history.ToolCall {
	var out []history.ToolCall
	for _, c := range docs {
		out = append(out, history.ToolCall{ID: c.ID, Type: c.Type, Function: history.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

func toCompactionDoc(userID string, c *history.Compaction) *compactionDoc {
	if c == nil {
		return nil
	}
	return &compactionDoc{UserID: userID, StartSeq: c.StartSeq, EndSeq: c.EndSeq, Summary: c.Summary,
		Tokens: c.Tokens, Model: c.Model, CreatedAt: c.CreatedAt}
}

func fromCompactionDoc(id string, d *compactionDoc) *history.Compaction {
	if d == nil {
		return nil
	}
	return &history.Compaction{ID: id, StartSeq: d.StartSeq, EndSeq: d.EndSeq, Summary: d.Summary,
		Tokens: d.Tokens, Model: d.Model, CreatedAt: d.CreatedAt.UTC()}
}

func feedbackUTC(f *history.Feedback) *history.Feedback {
	if f != nil {
		f.At = f.At.UTC()
	}
	return f
}
