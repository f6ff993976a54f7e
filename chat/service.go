// Package chat runs one chat turn: it stores the user's message, builds what
// the model sees, calls the model and stores the reply, within per-user
// limits that protect the bill. It knows nothing of HTTP or of which model
// service answers.
package chat

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// Model is the chat model a turn calls.
type Model interface {
	// Generate answers req. With onDelta set, it streams: onDelta receives
	// each piece of the reply's text as it arrives.
	Generate(ctx context.Context, req Request, onDelta func(string)) (*Reply, error)
}

// Request is what the model is asked.
type Request struct {
	Model  string
	System string // the operator's prompt: always the first system message
	// Instructions are the session's own, sent after the operator's
	// prompt as a system message of their own.
	Instructions string
	Memory       string // the user's long-term memory block's stable part, sent as a system message after them
	// Context is what changes from turn to turn (the memory block's recent
	// part, the facts chosen for the message, the recalled excerpts): a
	// system message just before the last user message of Messages, so
	// that the request's start stays what the provider's cache holds.
	Context    string
	Messages   []history.Message
	Tools      []Tool // the app's functions the model may call
	ToolChoice string // with Tools: auto (""), none, required, or a tool's name
	// CacheKey names the session to the provider's prompt cache (OpenAI's
	// prompt_cache_key): its requests are routed to the same cache.
	CacheKey string
	// Parts are what the model is sent of the attachments of Messages, by
	// id; an attachment not here (an image of an older turn, one deleted)
	// is sent as its label ("[image: cat.png]").
	Parts map[string]PartContent
	// ImageDetail is OpenAI's detail for the images sent: low, high or auto.
	ImageDetail string
}

// Reply is the model's answer.
type Reply struct {
	Content          string
	ToolCalls        []history.ToolCall // the calls the model asks the app to make
	Model            string
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
	// CachedTokens are the part of PromptTokens the provider served from
	// its prompt cache (as it reported them; 0 if it did not).
	CachedTokens int
}

// Titler names a conversation from its first exchange.
type Titler interface {
	Title(ctx context.Context, model, user, reply string) (string, error)
}

// Memory is the user's long-term memory as a turn uses it (its block is
// read with the turn, see TurnQuery.Memory).
type Memory interface {
	// Claim moves the learning watermark of s past its new messages when
	// enough have accumulated (a turn stores s in the commit of its
	// reply) and returns the batch to learn from.
	Claim(s *sessions.Session) (longterm.Batch, bool)
	// LearnClaimed extracts memory from a claimed batch.
	LearnClaimed(ctx context.Context, s *sessions.Session, model string, b longterm.Batch) error
	// Relevant is what the turn adds to u's block for a message embedded
	// as v: the facts the block leaves out most relevant to it (see
	// longterm.Service.Relevant), and their tokens.
	Relevant(u *longterm.User, v []float32) (string, int)
	// Block returns userID's memory block and its tokens (one read; empty
	// when memory is off or holds nothing).
	Block(ctx context.Context, userID string) (string, int, error)
	// WithFacts returns u with its live facts, reading them if u was read
	// without them.
	WithFacts(ctx context.Context, u *longterm.User) (*longterm.User, error)
}

// Service runs chat turns.
type Service struct {
	Memory Memory   // nil: no long-term memory
	Recall Indexer  // nil: exchanges are not embedded for search
	Finder Recaller // nil: no recall in turns
	Turns  TurnStore
	// Jobs keeps the work that follows each reply, recorded in the
	// reply's commit (nil: that work runs after the reply, not recorded).
	Jobs JobStore
	// Runner runs each reply's job once the reply is delivered (a server's
	// is Background, so the turn ends at its reply); nil: Now, on the
	// turn's goroutine.
	Runner Runner
	Drafts Drafts // nil: no drafts, no stopping
	// DraftInterval is how often a streaming reply's draft is written;
	// 0: DefaultDraftInterval.
	DraftInterval time.Duration
	Sessions      *sessions.Service
	History       *history.Service
	Model         Model
	Titler        Titler
	// Files are the users' uploads their messages name (nil: messages
	// carry no attachments); ImageDetail the detail images are sent at
	// and counted by ("": DefaultImageDetail).
	Files        *attachments.Service
	ImageDetail  string
	Usage        UsageStore
	Limits       Limits
	SystemPrompt string
	// AllowSystemMessages lets clients append messages with role system,
	// which reach the model as instructions beside SystemPrompt. Off, only
	// the server speaks as system: a signed-in user is not trusted to
	// instruct the model over the operator's prompt.
	AllowSystemMessages bool
	ModelTimeout        time.Duration
	// MaxToolRounds bounds the replies with tool calls in a row after a
	// user's message; past it the model must answer in text. 0:
	// DefaultMaxToolRounds.
	MaxToolRounds int
	// BusyWait is how long a turn or an append waits while another
	// message of its session is answered; 0: DefaultBusyWait.
	BusyWait time.Duration
	Now      func() time.Time
	Log      *slog.Logger

	// LegacyOrder sends the whole memory block and the recalled excerpts
	// before the summary and the history, as requests were ordered before
	// the cache order (make bench's baseline).
	LegacyOrder bool

	systemTokens sync.Map // model → tokens of SystemPrompt, counted once
}

func (svc *Service) logError(ctx context.Context, msg, sessionID string, err error) {
	if svc.Log != nil {
		svc.Log.ErrorContext(ctx, msg, "sessionId", sessionID, "error", err.Error())
	}
}

type upstreamError string

func (e upstreamError) Error() string { return string(e) }

const errEmptyReply = upstreamError("the model returned an empty reply")

func (svc *Service) now() time.Time { return clock.Stored(svc.Now) }
