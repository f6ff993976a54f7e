package functions

import (
	"net/http"
	"strings"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

func (a *App) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := a.decode(r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	turn := chat.TurnRequest{
		UserID: UserID(r.Context()), SessionID: req.SessionID,
		Message: req.Message, Attachments: req.Attachments, ClientMessageID: req.ClientMessageID,
		Regenerate: req.Regenerate, Edit: req.Edit,
		Tools: req.Tools, ToolChoice: req.ToolChoice, ToolResults: req.ToolResults, AbandonTools: req.AbandonTools,
	}
	if req.Stream || strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		a.streamChat(w, r, turn)
		return
	}
	turn.OnReply = func(res *chat.TurnResult) {
		info(r.Context()).sessionID = res.Session.ID
		writeJSON(w, http.StatusOK, responseOf(res))
	}
	if _, err := a.tracedTurn(r.Context(), turn); err != nil {
		a.writeError(w, r, err)
	}
}

// streamChat answers a turn with server-sent events: "session" once the
// user's message is stored, "delta" for each piece of the reply,
// "tool_calls" when the reply asks for calls, then "done" with the stored
// reply and the turn's status, or "error". A failure before anything was
// streamed is an ordinary JSON error with its status. If the client goes
// away, the turn still completes and the reply is stored.
func (a *App) streamChat(w http.ResponseWriter, r *http.Request, turn chat.TurnRequest) {
	sse := newSSE(w)
	send := sse.event
	turn.OnStart = func(s *sessions.Session, user history.Message, replyID string) {
		info(r.Context()).sessionID = s.ID
		send("session", map[string]any{"sessionId": s.ID, "userMessage": user, "replyId": replyID})
	}
	turn.OnDelta = func(text string) { send("delta", map[string]string{"text": text}) }
	turn.OnReply = func(res *chat.TurnResult) {
		info(r.Context()).sessionID = res.Session.ID
		if res.Replayed {
			send("session", map[string]any{"sessionId": res.Session.ID, "userMessage": res.User, "replyId": res.Reply.ID})
			if res.Reply.Content != "" {
				send("delta", map[string]string{"text": res.Reply.Content})
			}
		}
		if len(res.Reply.ToolCalls) > 0 {
			send("tool_calls", map[string]any{"replyId": res.Reply.ID, "toolCalls": res.Reply.ToolCalls})
		}
		send("done", responseOf(res))
	}
	_, err := a.tracedTurn(r.Context(), turn)
	switch {
	case err != nil && !sse.started:
		a.writeError(w, r, err)
	case err != nil:
		a.logFailure(r, StatusOf(err), err)
		send("error", bodyOf(err))
	}
}

type chatRequest struct {
	SessionID string `json:"sessionId,omitempty"`
	Message   string `json:"message"`
	// Attachments are ids of the caller's uploads (POST /attachments).
	Attachments     []string `json:"attachments,omitempty"`
	ClientMessageID string   `json:"clientMessageId,omitempty"`
	Stream          bool     `json:"stream,omitempty"`
	Regenerate      string   `json:"regenerate,omitempty"` // id of a message to answer anew
	Edit            string   `json:"edit,omitempty"`       // id of a user message to send anew as message
	// The app's tools (see chat.TurnRequest).
	Tools        []chat.Tool       `json:"tools,omitempty"`
	ToolChoice   string            `json:"toolChoice,omitempty"`
	ToolResults  []chat.ToolResult `json:"toolResults,omitempty"`
	AbandonTools bool              `json:"abandonTools,omitempty"`
}

type chatResponse struct {
	SessionID   string          `json:"sessionId"`
	UserMessage history.Message `json:"userMessage"` // the message the reply answers (with tool results: the last of them)
	Reply       history.Message `json:"reply"`
	Replayed    bool            `json:"replayed,omitempty"`
	// Status is "completed", or "requires_action" when the reply asks for
	// ToolCalls: the app runs them and sends their results.
	Status    string             `json:"status"`
	ToolCalls []history.ToolCall `json:"toolCalls,omitempty"`
}

func responseOf(res *chat.TurnResult) chatResponse {
	return chatResponse{SessionID: res.Session.ID, UserMessage: res.User, Reply: res.Reply, Replayed: res.Replayed,
		Status: res.Status(), ToolCalls: res.Reply.ToolCalls}
}

// stopReply stops a streaming reply, whichever instance runs it.
func (a *App) stopReply(w http.ResponseWriter, r *http.Request) {
	if err := a.Chat.Stop(r.Context(), UserID(r.Context()), sessionID(r), r.PathValue("replyId")); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"stopping": true})
}
