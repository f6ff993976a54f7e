package firestoredb

import (
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// sessionDoc is chat_sessions/{id} as stored.
type sessionDoc struct {
	UserID           string      `firestore:"userId"`
	Title            string      `firestore:"title"`
	TitleSource      string      `firestore:"titleSource"`
	Model            string      `firestore:"model"`
	Status           string      `firestore:"status"`
	CreatedAt        time.Time   `firestore:"createdAt"`
	UpdatedAt        time.Time   `firestore:"updatedAt"`
	LastActivityAt   time.Time   `firestore:"lastActivityAt"`
	ArchivedAt       *time.Time  `firestore:"archivedAt"`
	DeletedAt        *time.Time  `firestore:"deletedAt"`
	ExpiresAt        time.Time   `firestore:"expiresAt"`
	MessageCount     int         `firestore:"messageCount"`
	TokenCount       int         `firestore:"tokenCount"`
	NextSeq          int         `firestore:"nextSeq"`
	RetentionDays    int         `firestore:"retentionDays"`
	Summary          string      `firestore:"summary"`
	SummaryUpdatedAt *time.Time  `firestore:"summaryUpdatedAt"`
	Metadata         metadataDoc `firestore:"metadata"`
	PendingToolCalls []string    `firestore:"pendingToolCalls"`
}

type metadataDoc struct {
	AgentType string            `firestore:"agentType"`
	Topic     string            `firestore:"topic"`
	Tags      []string          `firestore:"tags"`
	Custom    map[string]string `firestore:"custom"`
}

func toSessionDoc(s *sessions.Session) *sessionDoc {
	return &sessionDoc{
		UserID: s.UserID, Title: s.Title, TitleSource: string(s.TitleSource), Model: s.Model,
		Status: string(s.Status), CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		LastActivityAt: s.LastActivityAt, ArchivedAt: s.ArchivedAt, DeletedAt: s.DeletedAt,
		ExpiresAt: s.ExpiresAt, MessageCount: s.MessageCount, TokenCount: s.TokenCount,
		NextSeq: s.NextSeq, RetentionDays: s.RetentionDays, Summary: s.Summary,
		SummaryUpdatedAt: s.SummaryUpdatedAt, PendingToolCalls: s.PendingToolCalls,
		Metadata: metadataDoc{AgentType: s.Metadata.AgentType, Topic: s.Metadata.Topic,
			Tags: s.Metadata.Tags, Custom: s.Metadata.Custom},
	}
}

func decodeSession(snap *firestore.DocumentSnapshot) (*sessions.Session, error) {
	var d sessionDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, sessions.Wrap(sessions.EINTERNAL, err, "internal error")
	}
	return &sessions.Session{
		ID: snap.Ref.ID, UserID: d.UserID, Title: d.Title, TitleSource: sessions.TitleSource(d.TitleSource),
		Model: d.Model, Status: sessions.Status(d.Status), CreatedAt: d.CreatedAt.UTC(),
		UpdatedAt: d.UpdatedAt.UTC(), LastActivityAt: d.LastActivityAt.UTC(),
		ArchivedAt: utc(d.ArchivedAt), DeletedAt: utc(d.DeletedAt), ExpiresAt: d.ExpiresAt.UTC(),
		MessageCount: d.MessageCount, TokenCount: d.TokenCount, NextSeq: d.NextSeq,
		RetentionDays: d.RetentionDays, Summary: d.Summary, SummaryUpdatedAt: utc(d.SummaryUpdatedAt),
		PendingToolCalls: d.PendingToolCalls,
		Metadata: sessions.Metadata{AgentType: d.Metadata.AgentType, Topic: d.Metadata.Topic,
			Tags: d.Metadata.Tags, Custom: d.Metadata.Custom},
	}, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// messageDoc is chat_sessions/{sid}/messages/{id} as stored. It carries the
// owner's userId so that security rules need no get() of the session, and
// erasure can find every message of a user.
type messageDoc struct {
	UserID          string         `firestore:"userId"`
	Seq             int            `firestore:"seq"`
	Role            string         `firestore:"role"`
	Content         string         `firestore:"content"`
	Name            string         `firestore:"name,omitempty"`
	ToolCalls       []toolCallDoc  `firestore:"toolCalls,omitempty"`
	ToolCallID      string         `firestore:"toolCallId,omitempty"`
	CreatedAt       time.Time      `firestore:"createdAt"`
	Tokens          int            `firestore:"tokens"`
	ClientMessageID string         `firestore:"clientMessageId,omitempty"`
	BatchSize       int            `firestore:"batchSize,omitempty"` // on keyed batches: how many messages share the key
	Metadata        messageMetaDoc `firestore:"metadata"`
}

type toolCallDoc struct {
	ID        string `firestore:"id"`
	Type      string `firestore:"type"`
	Name      string `firestore:"name"`
	Arguments string `firestore:"arguments"`
}

type messageMetaDoc struct {
	Model        string   `firestore:"model,omitempty"`
	Sources      []string `firestore:"sources,omitempty"`
	ToolsUsed    []string `firestore:"toolsUsed,omitempty"`
	DurationMs   int64    `firestore:"durationMs,omitempty"`
	FinishReason string   `firestore:"finishReason,omitempty"`
}

func toMessageDoc(m *history.Message, batchSize int) *messageDoc {
	d := &messageDoc{
		UserID: m.UserID, Seq: m.Seq, Role: string(m.Role), Content: m.Content, Name: m.Name,
		ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt, Tokens: m.Tokens,
		ClientMessageID: m.ClientMessageID, BatchSize: batchSize,
		Metadata: messageMetaDoc{Model: m.Metadata.Model, Sources: m.Metadata.Sources,
			ToolsUsed: m.Metadata.ToolsUsed, DurationMs: m.Metadata.DurationMs,
			FinishReason: m.Metadata.FinishReason},
	}
	for _, c := range m.ToolCalls {
		d.ToolCalls = append(d.ToolCalls, toolCallDoc{ID: c.ID, Type: c.Type, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return d
}

func decodeMessage(snap *firestore.DocumentSnapshot) (history.Message, int, error) {
	var d messageDoc
	if err := snap.DataTo(&d); err != nil {
		return history.Message{}, 0, sessions.Wrap(sessions.EINTERNAL, err, "internal error")
	}
	m := history.Message{
		ID: snap.Ref.ID, SessionID: snap.Ref.Parent.Parent.ID, UserID: d.UserID, Seq: d.Seq,
		Role: history.Role(d.Role), Content: d.Content, Name: d.Name, ToolCallID: d.ToolCallID,
		CreatedAt: d.CreatedAt.UTC(), Tokens: d.Tokens, ClientMessageID: d.ClientMessageID,
		Metadata: history.MessageMetadata{Model: d.Metadata.Model, Sources: d.Metadata.Sources,
			ToolsUsed: d.Metadata.ToolsUsed, DurationMs: d.Metadata.DurationMs,
			FinishReason: d.Metadata.FinishReason},
	}
	for _, c := range d.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: c.ID, Type: c.Type,
			Function: history.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return m, d.BatchSize, nil
}
