// Package chat runs one chat turn: it stores the user's message, builds what
// the model sees, calls the model and stores the reply, within per-user
// limits that protect the bill. It knows nothing of HTTP or of which model
// service answers.
package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
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

// Service runs chat turns.
type Service struct {
	Sessions     *sessions.Service
	History      *history.Service
	Model        Model
	Usage        UsageRepo
	Limits       Limits
	SystemPrompt string
	// Budget is the most tokens of history and system prompt sent to the
	// model; 0 means 75% of the model's context window, leaving the rest
	// for the reply.
	Budget       int
	ModelTimeout time.Duration
	Now          func() time.Time
	Log          *slog.Logger
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
	Session *sessions.Session
	User    history.Message
	Reply   history.Message
	// Replayed is true when the turn had been completed before under the
	// same ClientMessageID and nothing new was done.
	Replayed bool
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
	stored, err := svc.History.Append(ctx, s, key, draft)
	if err != nil {
		return nil, err
	}
	user := stored[0]
	if req.OnStart != nil {
		req.OnStart(s, user)
	}

	// From here on the turn completes even if the caller goes away.
	ctx = context.WithoutCancel(ctx)
	msgs, err := svc.context(ctx, s, user)
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithTimeout(ctx, svc.ModelTimeout)
	defer cancel()
	start := svc.now()
	reply, err := svc.Model.Generate(mctx, Request{Model: s.Model, System: svc.SystemPrompt, Messages: msgs}, req.OnDelta)
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
	out, err := svc.History.Append(ctx, s, replyKey, answer)
	if sessions.ErrorCode(err) == sessions.ECONFLICT {
		// A concurrent retry of this turn stored its reply first: use that.
		out, err = svc.History.Find(ctx, s, replyKey)
	}
	if err != nil {
		return nil, err
	}
	svc.spend(ctx, req.UserID, reply, msgs, out[0])
	return &TurnResult{Session: s, User: user, Reply: out[0]}, nil
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

// budget is the most tokens of context the model may be sent.
func (svc *Service) budget(model string) int {
	if svc.Budget > 0 {
		return svc.Budget
	}
	return history.ContextWindow(model) * 3 / 4
}

// context returns the history the model sees this turn: the latest messages
// that fit the budget beside the system prompt. The user's new message must
// fit; if it cannot, the turn fails rather than send an oversized request.
func (svc *Service) context(ctx context.Context, s *sessions.Session, user history.Message) ([]history.Message, error) {
	budget := svc.budget(s.Model) - history.ReplyPriming
	if svc.SystemPrompt != "" {
		budget -= svc.History.Tokens.Count(s.Model, &history.Message{Role: history.RoleSystem, Content: svc.SystemPrompt})
	}
	msgs, err := svc.History.Recent(ctx, s, budget)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.ID == user.ID {
			return msgs, nil
		}
	}
	return nil, sessions.Errorf(sessions.EINVALID, "the message does not fit the model's context budget of %d tokens", budget)
}

// spend records the tokens a turn cost against the user's daily limit. The
// reply is stored already, so a failure here is logged, not returned.
func (svc *Service) spend(ctx context.Context, userID string, r *Reply, sent []history.Message, reply history.Message) {
	n := r.PromptTokens + r.CompletionTokens
	if n == 0 { // the service did not report usage: use our own counts
		for _, m := range sent {
			n += m.Tokens
		}
		n += reply.Tokens
	}
	err := svc.Usage.UpdateUsage(ctx, userID, func(u *Usage) error {
		u.AddTokens(svc.now(), n)
		return nil
	})
	if err != nil && svc.Log != nil {
		svc.Log.ErrorContext(ctx, "recording token usage failed", "error", err.Error())
	}
}
