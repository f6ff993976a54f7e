package functions

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/kernel/strictjson"
	"github.com/chatmemory/backend/sessions"
)

// The Vercel AI SDK's chat protocol: useChat's DefaultChatTransport POSTs
// {id, messages, trigger, messageId} to /ai-sdk/chat and reads the UI
// message stream (server-sent events whose data are JSON chunks, ending
// with [DONE]); with resume it GETs /ai-sdk/chat/{id}/stream. The turn is
// POST /chat's, with its guarantees: the chat's id names a session in the
// caller's own namespace, only the last message is taken (the history is
// the server's), and a user message's id is its turn's idempotency key.

// aiChatRequest is what DefaultChatTransport sends, with what an app may
// add through its body option.
type aiChatRequest struct {
	ID        string            `json:"id"`
	Messages  []json.RawMessage `json:"messages"`
	Trigger   string            `json:"trigger"`
	MessageID string            `json:"messageId,omitempty"`
	// Tools are the app's own (see POST /chat), offered with each request.
	Tools      []chat.Tool `json:"tools,omitempty"`
	ToolChoice string      `json:"toolChoice,omitempty"`
	// Resumable: the client's abort is a disconnect (the reply completes
	// and GET …/stream resumes it) rather than a stop.
	Resumable bool `json:"resumable,omitempty"`
}

// uiMessage is the part of a UIMessage the server reads.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

type uiPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	URL        string          `json:"url,omitempty"` // a file part's: /attachments/{id}
	MediaType  string          `json:"mediaType,omitempty"`
	Filename   string          `json:"filename,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	State      string          `json:"state,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
}

func (a *App) aiChat(w http.ResponseWriter, r *http.Request) {
	var req aiChatRequest
	if err := a.decode(r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	turn, replyTo, err := a.aiTurn(r.Context(), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.streamUI(w, r, turn, replyTo, req.Resumable)
}

// aiTurn maps a request of the transport to a turn: the last message is a
// user's (a turn, keyed by its id), or the assistant's with the results
// of its tool calls (the turn continues it: replyTo is its id); a
// regeneration answers anew the reply messageId names; a user message
// sent with messageId (useChat's sendMessage({text, messageId})) is an
// edit of that message.
func (a *App) aiTurn(ctx context.Context, req aiChatRequest) (chat.TurnRequest, string, error) {
	sessionID, err := a.chatSession(ctx, req.ID)
	if err != nil {
		return chat.TurnRequest{}, "", err
	}
	turn := chat.TurnRequest{UserID: UserID(ctx), SessionID: sessionID, Tools: req.Tools, ToolChoice: req.ToolChoice}
	switch req.Trigger {
	case "regenerate-message":
		// regenerate() without a messageId means the last reply, as the
		// SDK's own chat drops it: its question is answered anew.
		turn.Regenerate = req.MessageID
		if turn.Regenerate == "" {
			id, err := a.lastQuestion(ctx, turn.SessionID)
			turn.Regenerate = id
			return turn, "", err
		}
		return turn, "", nil
	case "submit-message":
	default:
		return turn, "", errs.Errorf(errs.EINVALID, "trigger must be submit-message or regenerate-message")
	}
	if len(req.Messages) == 0 {
		return turn, "", errs.Errorf(errs.EINVALID, "messages must hold the message to send")
	}
	var last uiMessage
	if err := strictjson.DecodeOpen(req.Messages[len(req.Messages)-1], &last); err != nil {
		return turn, "", within(fmt.Sprintf("messages[%d]", len(req.Messages)-1), err)
	}
	switch last.Role {
	case "user":
		if err := history.ValidateKey(last.ID); err != nil || last.ID == "" {
			return turn, "", errs.Errorf(errs.EINVALID, "messages[%d].id (the turn's idempotency key) must be 1 to %d printable characters", len(req.Messages)-1, history.MaxKeyLen)
		}
		if err := userTurn(&turn, last, fmt.Sprintf("messages[%d]", len(req.Messages)-1)); err != nil {
			return turn, "", err
		}
		if req.MessageID != "" {
			return a.editTurn(ctx, turn, req.MessageID)
		}
		turn.Create, turn.ClientMessageID = true, last.ID
		return turn, "", nil
	case "assistant":
		results, err := a.toolOutputs(ctx, turn.SessionID, last)
		if err != nil {
			return turn, "", err
		}
		turn.ToolResults = results
		turn.ClientMessageID = resultsKey(results)
		return turn, last.ID, nil
	}
	return turn, "", errs.Errorf(errs.EINVALID, "messages[%d].role must be user, or assistant with tool outputs", len(req.Messages)-1)
}

// userTurn takes a user's UIMessage into turn: its text parts are the
// message, its file parts the attachments they name.
func userTurn(turn *chat.TurnRequest, m uiMessage, field string) error {
	for i, p := range m.Parts {
		switch p.Type {
		case "text":
			turn.Message += p.Text
		case "file":
			id, err := fileAttachment(fmt.Sprintf("%s.parts[%d].url", field, i), p.URL)
			if err != nil {
				return err
			}
			turn.Attachments = append(turn.Attachments, id)
		}
	}
	return nil
}

// lastQuestion is the id of the newest user message of a chat's active
// branch: the one its last reply answers.
func (a *App) lastQuestion(ctx context.Context, sessionID string) (string, error) {
	s, err := a.Sessions.Get(ctx, UserID(ctx), sessionID)
	if err != nil {
		return "", err
	}
	req := history.PageRequest{Order: history.NewestFirst, Limit: paging.MaxSize}
	for {
		page, err := a.History.Page(ctx, s, req)
		if err != nil {
			return "", err
		}
		for _, m := range page.Messages {
			if m.Role == history.RoleUser {
				return m.ID, nil
			}
		}
		if req.PageToken = page.NextPageToken; req.PageToken == "" {
			return "", errs.Errorf(errs.EINVALID, "the chat has no message to answer again: send one (messageId names a reply to regenerate)")
		}
	}
}

// within is a decoding error of a value at path, its message naming the
// field from there.
func within(path string, err error) error {
	msg := errs.Message(err)
	switch {
	case strings.HasPrefix(msg, "the body "):
		msg = path + " " + strings.TrimPrefix(msg, "the body ")
	case strings.HasPrefix(msg, "malformed JSON"):
		msg = path + ": " + msg
	case strings.HasPrefix(msg, "["):
		msg = path + msg
	default:
		msg = path + "." + msg
	}
	return errs.Errorf(errs.CodeOf(err), "%s", msg)
}

// chatSession is the session a chat id names for the caller: their own
// session of that id when there is one (so a chat listed from the
// sessions, or started over POST /chat, opens by its session's id), else
// the chat of that id in their own namespace. Only an id as long as a
// session's costs the read.
func (a *App) chatSession(ctx context.Context, chatID string) (string, error) {
	if err := checkChatID(chatID); err != nil {
		return "", err
	}
	userID := UserID(ctx)
	if len(chatID) == len(aiChatSession(userID, chatID)) {
		_, err := a.Sessions.Get(ctx, userID, chatID)
		if err == nil {
			return chatID, nil
		}
		if errs.CodeOf(err) != errs.ENOTFOUND {
			return "", err
		}
	}
	return aiChatSession(userID, chatID), nil
}

// editTurn makes turn the edit of the user message whose UIMessage id is
// uiMessageID (the id its client gave it, or the stored id of one sent
// without): the new text is written beside it and answered. The edit is
// keyed by the message and its new text, so a retry replays it.
func (a *App) editTurn(ctx context.Context, turn chat.TurnRequest, uiMessageID string) (chat.TurnRequest, string, error) {
	sum := sha256.Sum256([]byte(uiMessageID + "\x00" + turn.Message + "\x00" + strings.Join(turn.Attachments, ",")))
	turn.ClientMessageID = "edit-" + hex.EncodeToString(sum[:16])
	s, err := a.Sessions.Get(ctx, turn.UserID, turn.SessionID)
	if err != nil {
		return turn, "", err
	}
	req := history.PageRequest{Order: history.NewestFirst, Limit: paging.MaxSize}
	for turn.Edit == "" {
		page, err := a.History.Page(ctx, s, req)
		if err != nil {
			return turn, "", err
		}
		if turn.Edit, err = a.edited(ctx, s.ID, page.Messages, uiMessageID, turn.ClientMessageID); err != nil {
			return turn, "", err
		}
		if req.PageToken = page.NextPageToken; turn.Edit == "" && req.PageToken == "" {
			return turn, "", errs.Errorf(errs.ENOTFOUND, "messageId %s names no user message of the chat", uiMessageID)
		}
	}
	return turn, "", nil
}

// edited is the stored id of the message an edit keyed key changes, from
// a page of the active branch: the user message uiMessageID names, or,
// when the edit is there already (a retry), the version of it beside it
// that uiMessageID names. "" when the page has neither.
func (a *App) edited(ctx context.Context, sessionID string, page []history.Message, uiMessageID, key string) (string, error) {
	for _, m := range page {
		switch {
		case m.Role != history.RoleUser:
		case uiID(m) == uiMessageID:
			return m.ID, nil
		case uiID(m) == key:
			versions, err := a.History.MessagesAt(ctx, sessionID, m.Siblings)
			if err != nil {
				return "", err
			}
			for _, v := range versions {
				if v.Role == history.RoleUser && uiID(v) == uiMessageID {
					return v.ID, nil
				}
			}
		}
	}
	return "", nil
}

// aiChatSession is the session a chat id names for a user: derived under
// the server's secret, so two users' chats never meet and nobody can name
// another's.
func aiChatSession(userID, chatID string) string {
	return ids.Derive(20, "ai-sdk-chat", userID, chatID)
}

// checkChatID checks a chat id from a client.
func checkChatID(id string) error {
	if !ids.Valid(id) {
		return errs.Errorf(errs.EINVALID, "id (the chat's) must be 1 to 128 letters, digits, '_' or '-'")
	}
	return nil
}

// toolOutputs are the results an assistant message carries for the calls
// its session awaits results for (the message holds its earlier rounds'
// too).
func (a *App) toolOutputs(ctx context.Context, sessionID string, m uiMessage) ([]chat.ToolResult, error) {
	s, err := a.Sessions.Get(ctx, UserID(ctx), sessionID)
	if err != nil {
		return nil, err
	}
	var out []chat.ToolResult
	for _, p := range m.Parts {
		if !strings.HasPrefix(p.Type, "tool-") && p.Type != "dynamic-tool" || !slices.Contains(s.Bookkeeping.PendingToolCalls, p.ToolCallID) {
			continue
		}
		switch p.State {
		case "output-available":
			out = append(out, chat.ToolResult{ToolCallID: p.ToolCallID, Content: outputText(p.Output)})
		case "output-error":
			out = append(out, chat.ToolResult{ToolCallID: p.ToolCallID, Content: "error: " + p.ErrorText})
		}
	}
	if len(out) == 0 {
		return nil, errs.Errorf(errs.EINVALID, "the last message carries no output for a tool call awaiting one")
	}
	return out, nil
}

// outputText is a tool's output as the model is sent it: a string as it
// is, anything else as JSON.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// resultsKey names the turn of a set of tool results, so that a retry of
// the same results replays it.
func resultsKey(results []chat.ToolResult) string {
	h := sha256.New()
	for _, r := range results {
		h.Write([]byte(r.ToolCallID))
		h.Write([]byte{0})
	}
	return "tools-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// streamUI runs the turn, answering with the UI message stream. Errors
// before the stream starts are ordinary JSON errors with their status;
// after, an error chunk. Unless resumable, the client going away stops the
// reply, which is stored as far as it got.
func (a *App) streamUI(w http.ResponseWriter, r *http.Request, turn chat.TurnRequest, replyTo string, resumable bool) {
	ui := newUIStream(w, r)
	textID := ""
	var mu sync.Mutex
	replied := make(chan struct{})
	turn.OnStart = func(s *sessions.Session, _ history.Message, replyID string) {
		info(r.Context()).sessionID = s.ID
		textID = "text-" + replyID
		ui.begin(cmp.Or(replyTo, replyID), map[string]any{"sessionId": s.ID})
		ui.send(map[string]any{"type": "text-start", "id": textID})
		if !resumable {
			go a.stopWhenGone(r, s.ID, replyID, replied)
		}
	}
	turn.OnDelta = func(text string) {
		mu.Lock()
		defer mu.Unlock()
		ui.send(map[string]any{"type": "text-delta", "id": textID, "delta": text})
	}
	turn.OnReply = func(res *chat.TurnResult) {
		close(replied)
		info(r.Context()).sessionID = res.Session.ID
		mu.Lock()
		defer mu.Unlock()
		if res.Replayed {
			textID = "text-" + res.Reply.ID
			ui.begin(cmp.Or(replyTo, res.Reply.ID), map[string]any{"sessionId": res.Session.ID})
			ui.send(map[string]any{"type": "text-start", "id": textID})
			ui.send(map[string]any{"type": "text-delta", "id": textID, "delta": res.Reply.Content})
		}
		ui.finish(textID, res.Session.ID, res.Reply)
	}
	_, err := a.tracedTurn(r.Context(), turn)
	switch {
	case err != nil && !ui.started:
		a.writeError(w, r, err)
	case err != nil:
		a.logFailure(r, StatusOf(err), err)
		ui.fail(err)
	}
}

// stopWhenGone stops the reply when the client goes away before it is
// stored (useChat's stop aborts its request).
func (a *App) stopWhenGone(r *http.Request, sessionID, replyID string, replied <-chan struct{}) {
	select {
	case <-replied:
	case <-r.Context().Done():
		ctx := context.WithoutCancel(r.Context())
		if err := a.Chat.Stop(ctx, UserID(ctx), sessionID, replyID); err != nil && errs.CodeOf(err) != errs.ENOTFOUND {
			a.Log.ErrorContext(ctx, "stopping an aborted reply failed", "sessionId", sessionID, "error", err.Error())
		}
	}
}
