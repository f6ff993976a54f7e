// Package chat runs one chat turn: it stores the user's message, builds what
// the model sees, calls the model and stores the reply, within per-user
// limits that protect the bill. It knows nothing of HTTP or of which model
// service answers.
package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chatmemory/backend/history"
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
	Model    string
	System   string
	Memory   string // the user's long-term memory block, sent as a second system message
	Messages []history.Message
}

// Reply is the model's answer.
type Reply struct {
	Content          string
	Model            string
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
}

// Titler names a conversation from its first exchange.
type Titler interface {
	Title(ctx context.Context, model, user, reply string) (string, error)
}

// Memory is the user's long-term memory as a turn uses it.
type Memory interface {
	// Block returns the user's precomputed memory block and its tokens.
	Block(ctx context.Context, userID string) (string, int, error)
	// Learn extracts memory from the session's new messages, when due.
	Learn(ctx context.Context, s *sessions.Session, model string) error
}

// Service runs chat turns.
type Service struct {
	Memory       Memory // nil: no long-term memory
	Sessions     *sessions.Service
	History      *history.Service
	Model        Model
	Titler       Titler
	Usage        UsageRepo
	Limits       Limits
	SystemPrompt string
	// AllowSystemMessages lets clients append messages with role system,
	// which reach the model as instructions beside SystemPrompt. Off, only
	// the server speaks as system: a signed-in user is not trusted to
	// instruct the model over the operator's prompt.
	AllowSystemMessages bool
	ModelTimeout        time.Duration
	Now                 func() time.Time
	Log                 *slog.Logger

	systemTokens sync.Map // model → tokens of SystemPrompt, counted once
}

// TurnRequest is one message from a signed-in user.
type TurnRequest struct {
	UserID          string
	SessionID       string // empty: start a new session
	Message         string
	ClientMessageID string // optional idempotency key
	// OnStart, if set, is called once the user's message is stored.
	OnStart func(s *sessions.Session, user history.Message)
	// OnDelta, if set, streams the reply's text as it arrives.
	OnDelta func(string)
}

// TurnResult is a completed turn.
type TurnResult struct {
	Session *sessions.Session // as it is after the reply
	Tail    *history.Tail     // likewise
	Context *history.Context  // what the model was sent
	User    history.Message
	Reply   history.Message
	// Replayed is true when the turn had been completed before under the
	// same ClientMessageID and nothing new was done.
	Replayed bool

	memoryTokens int // of the memory block the turn sent
}

// replySuffix keys the reply of a turn from the key of its user message.
const replySuffix = ":reply"

// Turn runs one chat turn. The user's message is stored before the model is
// called, so a failed model call loses nothing: retrying with the same
// ClientMessageID does not store the message twice and produces the reply.
// Once the model has been called, a client going away does not stop the
// reply from being stored.
func (svc *Service) Turn(ctx context.Context, req TurnRequest) (*TurnResult, error) {
	draft := history.Draft{Role: history.RoleUser, Content: req.Message}
	if err := history.Validate(req.ClientMessageID, draft); err != nil {
		return nil, err
	}
	s, err := svc.session(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	key, replyKey := req.ClientMessageID, ""
	if key != "" {
		replyKey = key + replySuffix
		if res, err := svc.replay(ctx, s, key, replyKey); res != nil || err != nil {
			return res, err
		}
	}
	if err := svc.Usage.UpdateUsage(ctx, req.UserID, func(u *Usage) error {
		return u.Admit(svc.now(), svc.Limits)
	}); err != nil {
		return nil, err
	}
	stored, err := svc.History.AppendAll(ctx, s, key, draft)
	if err != nil {
		return nil, err
	}
	user := stored.Messages[0]
	if req.OnStart != nil {
		req.OnStart(s, user)
	}

	// From here on the turn completes even if the caller goes away.
	ctx = context.WithoutCancel(ctx)
	mem := svc.memory(ctx, req.UserID)
	built, err := svc.build(stored.Session, stored.Tail, mem)
	if err != nil {
		return nil, err
	}
	if !contains(built.Messages, user.Seq) {
		return nil, sessions.Errorf(sessions.EINVALID, "the message does not fit the model's context budget of %d tokens", built.Budget)
	}
	mctx, cancel := context.WithTimeout(ctx, svc.ModelTimeout)
	defer cancel()
	start := svc.now()
	reply, err := svc.Model.Generate(mctx, svc.request(stored.Session, built, mem), req.OnDelta)
	if err == nil && reply.Content == "" {
		err = errEmptyReply
	}
	if err != nil {
		return nil, sessions.Wrap(sessions.EUPSTREAM, err, "the model did not answer; your message is saved, retry with the same clientMessageId")
	}
	answer := history.Draft{Role: history.RoleAssistant, Content: reply.Content, Metadata: history.MessageMetadata{
		Model:        reply.Model,
		DurationMs:   svc.now().Sub(start).Milliseconds(),
		FinishReason: reply.FinishReason,
	}}
	out, err := svc.History.AppendAll(ctx, s, replyKey, answer)
	if sessions.ErrorCode(err) == sessions.ECONFLICT {
		// A concurrent retry of this turn stored its reply first: use that.
		var found []history.Message
		if found, err = svc.History.Find(ctx, s, replyKey); err == nil {
			return &TurnResult{Session: stored.Session, Tail: stored.Tail, Context: built, User: user, Reply: found[0], Replayed: true}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	svc.spend(ctx, req.UserID, reply, built, out.Messages[0])
	return &TurnResult{Session: out.Session, Tail: out.Tail, Context: built, User: user, Reply: out.Messages[0], memoryTokens: mem.tokens}, nil
}

func contains(msgs []history.Message, seq int) bool {
	for _, m := range msgs {
		if m.Seq == seq {
			return true
		}
	}
	return false
}

// fixed returns the tokens of the system prompt for model, counted once.
func (svc *Service) fixed(model string) int {
	if svc.SystemPrompt == "" {
		return 0
	}
	if n, ok := svc.systemTokens.Load(model); ok {
		return n.(int)
	}
	n := svc.History.Tokens.Count(model, &history.Message{Role: history.RoleSystem, Content: svc.SystemPrompt})
	svc.systemTokens.Store(model, n)
	return n
}

// memoryBlock is a user's long-term memory block and its tokens.
type memoryBlock struct {
	text   string
	tokens int
}

// systemMessageTokens is what wrapping a text in a system message adds.
const systemMessageTokens = 4

// memory reads the user's memory block (one document). A failure costs the
// turn its memory, not its reply: it is logged.
func (svc *Service) memory(ctx context.Context, userID string) memoryBlock {
	if svc.Memory == nil {
		return memoryBlock{}
	}
	text, n, err := svc.Memory.Block(ctx, userID)
	if err != nil {
		svc.logError(ctx, "reading long-term memory failed", "", err)
		return memoryBlock{}
	}
	if text == "" {
		return memoryBlock{}
	}
	return memoryBlock{text: text, tokens: n + systemMessageTokens}
}

// build chooses the session's context from its tail: no reads, no
// tokenizing of stored messages.
func (svc *Service) build(s *sessions.Session, t *history.Tail, mem memoryBlock) (*history.Context, error) {
	return history.Build(s, t, svc.History.BudgetFor(s), svc.fixed(s.Model)+mem.tokens)
}

// request is what the model is sent for a built context: the system prompt,
// the memory block, the summary in use as a system message, then the
// messages verbatim.
func (svc *Service) request(s *sessions.Session, c *history.Context, mem memoryBlock) Request {
	msgs := c.Messages
	if c.Compaction != nil {
		msgs = append([]history.Message{history.SummaryMessage(c.Compaction)}, msgs...)
	}
	return Request{Model: s.Model, System: svc.SystemPrompt, Memory: mem.text, Messages: msgs}
}

// Preview is what the next turn of a session would send the model.
type Preview struct {
	Context *history.Context
	Request Request
}

// Preview returns the caller's session's next context, read in one round
// trip whatever the length of the session.
func (svc *Service) Preview(ctx context.Context, userID, sessionID string) (*Preview, error) {
	s, t, err := svc.History.ReadContext(ctx, userID, sessionID)
	if err != nil {
		return nil, err
	}
	mem := svc.memory(ctx, userID)
	c, err := svc.build(s, t, mem)
	if err != nil {
		return nil, err
	}
	return &Preview{Context: c, Request: svc.request(s, c, mem)}, nil
}

// MaxTitleChars is the longest generated title kept.
const MaxTitleChars = 60

// AfterTurn does what must not delay the reply: it names the session after
// its first exchange (unless its user named it), learns long-term memory
// and folds old messages into the summary when the session needs it, and
// charges the model tokens of all that to the user (through a Metered
// model). Failures are logged; the next turn tries again.
func (svc *Service) AfterTurn(ctx context.Context, res *TurnResult) {
	if res == nil || res.Replayed {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	ctx, meter := WithMeter(ctx)
	// This work's model tokens count against the user's day like the turn's.
	defer func() { svc.addTokens(ctx, res.Session.UserID, meter.Tokens()) }()
	s := res.Session
	if s.TitleSource == sessions.TitleDefault && svc.Titler != nil {
		if err := svc.title(ctx, s, res); err != nil {
			svc.logError(ctx, "title generation failed", s.ID, err)
		}
	}
	if svc.Memory != nil {
		err := svc.Memory.Learn(ctx, s, s.Model)
		// Preconditions (nothing due, batch taken, opted out) are outcomes.
		if err != nil && sessions.ErrorCode(err) != sessions.EPRECONDITION {
			svc.logError(ctx, "learning long-term memory failed", s.ID, err)
		}
	}
	fixed := svc.fixed(s.Model) + res.memoryTokens // as the turn counted it
	if _, ok := history.PlanCompaction(s, res.Tail, svc.History.BudgetFor(s), fixed); ok {
		_, err := svc.History.Compact(ctx, s.ID, fixed)
		if err != nil && !errors.Is(err, history.ErrNothingToCompact) && !errors.Is(err, history.ErrCompactionBusy) {
			svc.logError(ctx, "compaction failed", s.ID, err)
		}
	}
}

func (svc *Service) title(ctx context.Context, s *sessions.Session, res *TurnResult) error {
	title, err := svc.Titler.Title(ctx, s.Model, res.User.Content, res.Reply.Content)
	if err != nil {
		return err
	}
	if title = CleanTitle(title); title == "" {
		return errors.New("the model proposed an empty title")
	}
	_, err = svc.Sessions.SetGeneratedTitle(ctx, s.ID, title)
	return err
}

// CleanTitle makes a model's proposal a title: one line, no quotes, at most
// MaxTitleChars characters, cut at a word boundary.
func CleanTitle(t string) string {
	t, _, _ = strings.Cut(strings.TrimSpace(t), "\n")
	t = strings.Trim(strings.TrimSpace(t), "\"'`*#. ")
	t = strings.TrimPrefix(t, "Title: ")
	r := []rune(t)
	if len(r) <= MaxTitleChars {
		return t
	}
	cut := string(r[:MaxTitleChars])
	if i := strings.LastIndex(cut, " "); i > MaxTitleChars/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:-") + "…"
}

func (svc *Service) logError(ctx context.Context, msg, sessionID string, err error) {
	if svc.Log != nil {
		svc.Log.ErrorContext(ctx, msg, "sessionId", sessionID, "error", err.Error())
	}
}

type upstreamError string

func (e upstreamError) Error() string { return string(e) }

const errEmptyReply = upstreamError("the model returned an empty reply")

func (svc *Service) now() time.Time { return sessions.Clock(svc.Now) }

// session loads the caller's session, or creates one. A new session of a
// keyed turn gets an id derived from the key, so a retry finds it.
func (svc *Service) session(ctx context.Context, req TurnRequest) (*sessions.Session, error) {
	if req.SessionID != "" {
		return svc.Sessions.Get(ctx, req.UserID, req.SessionID)
	}
	in := sessions.CreateInput{}
	if req.ClientMessageID != "" {
		h := sha256.Sum256([]byte(req.UserID + "\x00" + req.ClientMessageID))
		in.ID = hex.EncodeToString(h[:10])
	}
	s, err := svc.Sessions.Create(ctx, req.UserID, in)
	if sessions.ErrorCode(err) == sessions.ECONFLICT && in.ID != "" {
		return svc.Sessions.Get(ctx, req.UserID, in.ID)
	}
	return s, err
}

// replay returns the stored turn if this key's reply exists already.
func (svc *Service) replay(ctx context.Context, s *sessions.Session, key, replyKey string) (*TurnResult, error) {
	reply, err := svc.History.Find(ctx, s, replyKey)
	if err != nil || len(reply) == 0 {
		return nil, err
	}
	user, err := svc.History.Find(ctx, s, key)
	if err != nil || len(user) == 0 {
		return nil, err
	}
	return &TurnResult{Session: s, User: user[0], Reply: reply[0], Replayed: true}, nil
}

// spend records the tokens a turn cost against the user's daily limit. The
// reply is stored already, so a failure here is logged, not returned.
func (svc *Service) spend(ctx context.Context, userID string, r *Reply, sent *history.Context, reply history.Message) {
	n := r.PromptTokens + r.CompletionTokens
	if n == 0 { // the service did not report usage: use our own counts
		n = sent.Tokens + reply.Tokens
	}
	svc.addTokens(ctx, userID, n)
}

// addTokens records n tokens against the user's daily limit. What they
// paid for is stored already, so a failure here is logged, not returned.
func (svc *Service) addTokens(ctx context.Context, userID string, n int) {
	if n <= 0 {
		return
	}
	err := svc.Usage.UpdateUsage(ctx, userID, func(u *Usage) error {
		u.AddTokens(svc.now(), n)
		return nil
	})
	if err != nil && svc.Log != nil {
		svc.Log.ErrorContext(ctx, "recording token usage failed", "code", string(sessions.ErrorCode(err)))
	}
}

// Append stores messages the client composed itself (its own tool loop,
// or an imported conversation) as the next messages of the caller's
// session, under the same per-user limits as turns: the batch counts
// against the messages a minute, is refused once the day's tokens are
// spent, and its tokens count against the day (later turns send them to
// the model). A retry under the same key returns the stored batch and
// is not charged again.
func (svc *Service) Append(ctx context.Context, userID, sessionID, key string, drafts []history.Draft) ([]history.Message, error) {
	if err := history.Validate(key, drafts...); err != nil {
		return nil, err
	}
	if !svc.AllowSystemMessages {
		for i, d := range drafts {
			if d.Role == history.RoleSystem {
				return nil, sessions.Errorf(sessions.EINVALID, "messages[%d].role: system messages come from the server only (the operator can allow them with CLIENT_SYSTEM_MESSAGES=on)", i)
			}
		}
	}
	s, err := svc.Sessions.Get(ctx, userID, sessionID)
	if err != nil {
		return nil, err
	}
	if err := svc.Usage.UpdateUsage(ctx, userID, func(u *Usage) error {
		return u.AdmitMessages(svc.now(), svc.Limits, len(drafts))
	}); err != nil {
		return nil, err
	}
	a, err := svc.History.AppendAll(ctx, s, key, drafts...)
	if err != nil {
		return nil, err
	}
	if !a.Replayed {
		n := 0
		for _, m := range a.Messages {
			n += m.Tokens
		}
		svc.addTokens(ctx, userID, n)
	}
	return a.Messages, nil
}
