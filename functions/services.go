package functions

import (
	"context"
	"io"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// What the edge asks of the services behind it, method by method: package
// app gives it the real ones, the handler tests small fakes. The edge
// reaches no store but through these.

// Sessions creates, lists, reads, renames and moves sessions through their
// lifecycle (sessions.Service).
type Sessions interface {
	Create(ctx context.Context, userID string, in sessions.CreateInput) (*sessions.Session, error)
	Get(ctx context.Context, userID, id string) (*sessions.Session, error)
	List(ctx context.Context, userID string, req sessions.ListRequest) (*sessions.SessionPage, error)
	Update(ctx context.Context, userID, id string, upd sessions.Update) (*sessions.Session, error)
	Archive(ctx context.Context, userID, id string) (*sessions.Session, error)
	Restore(ctx context.Context, userID, id string) (*sessions.Session, error)
	Delete(ctx context.Context, userID, id string) (*sessions.Session, error)
}

// History reads a session's messages and records what users say of them
// (history.Service).
type History interface {
	Page(ctx context.Context, s *sessions.Session, req history.PageRequest) (*history.Page, error)
	MessagesAt(ctx context.Context, sessionID string, seqs []int) ([]history.Message, error)
	SwitchBranch(ctx context.Context, userID, sessionID string, seq int) (*sessions.Session, error)
	SetFeedback(ctx context.Context, userID, sessionID, messageID string, fb *history.Feedback) (*history.Message, error)
	RecordSummary(ctx context.Context, userID, sessionID string, from, to int, summary string) (*history.Compaction, bool, error)
}

// Chat runs turns and appends, stops and follows replies, and keeps each
// user's usage (chat.Service).
type Chat interface {
	Turn(ctx context.Context, req chat.TurnRequest) (*chat.TurnResult, error)
	Append(ctx context.Context, userID, sessionID, key, ifMatch string, drafts []history.Draft) (*chat.Appended, error)
	AfterAppend(ctx context.Context, a *chat.Appended)
	Preview(ctx context.Context, userID, sessionID string) (*chat.Preview, error)
	Stop(ctx context.Context, userID, sessionID, replyID string) error
	StopInProgress(ctx context.Context, userID, sessionID string) error
	InProgress(ctx context.Context, userID, sessionID string) (*chat.Progress, error)
	Follow(ctx context.Context, userID, sessionID string, p chat.Progress, send func(delta string)) (*history.Message, error)
	Standing(ctx context.Context, userID string, price func(model string) chat.Price) (*chat.Standing, error)
	AdmitSearch(ctx context.Context, userID string) error
	Spend(ctx context.Context, userID string, tokens int)
}

// Memory is a user's long-term memory: profile, facts, episodic history
// (longterm.Service).
type Memory interface {
	Get(ctx context.Context, userID string) (*longterm.View, error)
	SetEnabled(ctx context.Context, userID string, on bool) error
	UpdateProfile(ctx context.Context, userID string, p longterm.ProfilePatch) (*longterm.View, error)
	UpdateHistory(ctx context.Context, userID string, p longterm.HistoryPatch) (*longterm.View, error)
	Forget(ctx context.Context, userID, factID string) error
	ForgetAll(ctx context.Context, userID string) error
}

// Search finds what a user's conversations said (recall.Service).
type Search interface {
	Search(ctx context.Context, userID, query, sessionID string, limit int) ([]recall.Result, error)
}

// Privacy exports and erases everything of a user (retention.Privacy).
type Privacy interface {
	Export(ctx context.Context, userID string, w io.Writer) error
	Erase(ctx context.Context, userID string) (*retention.Erasure, error)
}

// Attachments keeps users' files (attachments.Service).
type Attachments interface {
	Upload(ctx context.Context, userID string, up attachments.Upload) (*attachments.Attachment, error)
	Open(ctx context.Context, userID, id string) (*attachments.Attachment, io.ReadCloser, error)
	List(ctx context.Context, userID string) ([]attachments.Attachment, error)
	Delete(ctx context.Context, userID, id string) error
	StoredBytes(ctx context.Context, userID string) (used, quota int64, err error)
	MaxFile() int64
}

// The real services are what the edge asks for.
var (
	_ Sessions    = (*sessions.Service)(nil)
	_ History     = (*history.Service)(nil)
	_ Chat        = (*chat.Service)(nil)
	_ Memory      = (*longterm.Service)(nil)
	_ Search      = (*recall.Service)(nil)
	_ Privacy     = (*retention.Privacy)(nil)
	_ Attachments = (*attachments.Service)(nil)
)
