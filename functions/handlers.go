package functions

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

func (a *App) createSession(w http.ResponseWriter, r *http.Request) {
	var in sessions.CreateInput
	if err := a.decode(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err := a.Sessions.Create(r.Context(), UserID(r.Context()), in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	info(r.Context()).sessionID = s.ID
	w.Header().Set("Location", "/sessions/"+s.ID)
	writeJSON(w, http.StatusCreated, s)
}

func (a *App) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	page, err := a.Sessions.List(r.Context(), UserID(r.Context()), sessions.ListRequest{
		Status: sessions.Status(q.Get("status")), Limit: limit, PageToken: q.Get("pageToken"),
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *App) getSession(w http.ResponseWriter, r *http.Request) {
	s, err := a.Sessions.Get(r.Context(), UserID(r.Context()), sessionID(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *App) updateSession(w http.ResponseWriter, r *http.Request) {
	var upd sessions.Update
	if err := a.decode(r, &upd); err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err := a.Sessions.Update(r.Context(), UserID(r.Context()), sessionID(r), upd)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *App) archiveSession(w http.ResponseWriter, r *http.Request) {
	a.transition(w, r, a.Sessions.Archive)
}

func (a *App) restoreSession(w http.ResponseWriter, r *http.Request) {
	a.transition(w, r, a.Sessions.Restore)
}

func (a *App) deleteSession(w http.ResponseWriter, r *http.Request) {
	a.transition(w, r, a.Sessions.Delete)
}

type transitionFunc func(ctx context.Context, userID, id string) (*sessions.Session, error)

func (a *App) transition(w http.ResponseWriter, r *http.Request, do transitionFunc) {
	s, err := do(r.Context(), UserID(r.Context()), sessionID(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *App) listMessages(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err := a.Sessions.Get(r.Context(), UserID(r.Context()), sessionID(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	var all bool
	switch q.Get("branch") {
	case "", "active":
	case "all":
		all = true
	default:
		a.writeError(w, r, errs.Errorf(errs.EINVALID, "branch must be active or all"))
		return
	}
	page, err := a.History.Page(r.Context(), s, history.PageRequest{
		Order: history.Order(q.Get("order")), Limit: limit, PageToken: q.Get("pageToken"), All: all,
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

type branchRequest struct {
	Seq *int `json:"seq"`
}

// switchBranch makes the branch through a message the active one.
func (a *App) switchBranch(w http.ResponseWriter, r *http.Request) {
	var req branchRequest
	if err := a.decode(r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	if req.Seq == nil {
		a.writeError(w, r, errs.Errorf(errs.EINVALID, "seq is required: the message whose branch to show"))
		return
	}
	s, err := a.History.SwitchBranch(r.Context(), UserID(r.Context()), sessionID(r), *req.Seq)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

type appendRequest struct {
	Messages        []history.Draft `json:"messages"`
	ClientMessageID string          `json:"clientMessageId,omitempty"`
	// IfMatch is the version GET …/context returned: the messages are
	// stored only if the session and its context are still as read (else
	// 412, nothing stored). The If-Match header says the same.
	IfMatch string `json:"ifMatch,omitempty"`
}

func (a *App) appendMessages(w http.ResponseWriter, r *http.Request) {
	var req appendRequest
	if err := a.decode(r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	ifMatch, err := ifMatchOf(r, req.IfMatch)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.Chat.Append(r.Context(), UserID(r.Context()), sessionID(r), req.ClientMessageID, ifMatch, req.Messages)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if res.Version != "" {
		w.Header().Set("ETag", strconv.Quote(res.Version))
	}
	body := map[string]any{"messages": res.Messages, "version": res.Version}
	if a.Recall != nil { // how many of them search will find, once embedded after the answer
		body["searchable"] = chat.Searchable(res.Messages)
	}
	writeJSON(w, http.StatusCreated, body)
	// The app has its answer; its exchanges are embedded, and its summary
	// made when due, after it.
	http.NewResponseController(w).Flush()
	a.Chat.AfterAppend(context.WithoutCancel(r.Context()), res)
}

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
		// The turn goes on after the answer (titles, summaries, learning):
		// an HTTP/1.1 client must not queue its next request behind that
		// work on this connection.
		w.Header().Set("Connection", "close")
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

// contextResponse is what the next turn would send the model.
type contextResponse struct {
	Strategy   string                         `json:"strategy"`
	Budget     int                            `json:"budget"`
	Tokens     int                            `json:"tokens"`
	Compaction *history.Compaction            `json:"compaction"`
	Messages   []openai.ChatCompletionMessage `json:"messages"`
	// Pruned are the tool results Messages show as stubs.
	Pruned []history.Pruned `json:"pruned"`
	// CompactionDue, when a summary is due, is the range it should fold
	// in (an app with its own model may POST …/compactions with it).
	CompactionDue *compactionRange `json:"compactionDue"`
	// Version names the session and its context as read; POST …/messages
	// with it as ifMatch stores the exchange only if nothing changed since.
	Version string `json:"version"`
}

func (a *App) sessionContext(w http.ResponseWriter, r *http.Request) {
	p, err := a.Chat.Preview(r.Context(), UserID(r.Context()), sessionID(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", strconv.Quote(p.Version))
	writeJSON(w, http.StatusOK, contextResponse{
		Strategy: string(p.Context.Strategy), Budget: p.Context.Budget, Tokens: p.Context.Tokens,
		Compaction: p.Context.Compaction, Messages: llm.Messages(p.Request), Version: p.Version,
		Pruned: append([]history.Pruned{}, p.Context.Pruned...), CompactionDue: dueRange(p.CompactionDue),
	})
}

// exportAccount streams everything the caller owns as one JSON document.
func (a *App) exportAccount(w http.ResponseWriter, r *http.Request) {
	uid := UserID(r.Context())
	cw := &countingWriter{w: w}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="chat-export.json"`)
	w.Header().Set("Cache-Control", "no-store")
	if err := a.Privacy.Export(r.Context(), uid, cw); err != nil {
		if cw.n == 0 {
			a.writeError(w, r, err)
			return
		}
		// The status is sent; the document stays unterminated, so the
		// client cannot mistake it for a complete export.
		a.logFailure(r, StatusOf(err), err)
	}
}

type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// eraseAccount deletes everything the caller owns, at once and for good.
func (a *App) eraseAccount(w http.ResponseWriter, r *http.Request) {
	e, err := a.Privacy.Erase(r.Context(), UserID(r.Context()))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

type memorySwitch struct {
	Enabled *bool `json:"enabled"`
}

// setMemory is the on/off switch: PATCH /memory {"enabled": false}.
func (a *App) setMemory(w http.ResponseWriter, r *http.Request) {
	var req memorySwitch
	if err := a.decode(r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	if req.Enabled == nil {
		a.writeError(w, r, errs.Errorf(errs.EINVALID, "give enabled: true or false"))
		return
	}
	if err := a.Memory.SetEnabled(r.Context(), UserID(r.Context()), *req.Enabled); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.getMemory(w, r)
}

func (a *App) getMemory(w http.ResponseWriter, r *http.Request) {
	v, err := a.Memory.Get(r.Context(), UserID(r.Context()))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *App) patchProfile(w http.ResponseWriter, r *http.Request) {
	var p longterm.ProfilePatch
	if err := a.decode(r, &p); err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := a.Memory.UpdateProfile(r.Context(), UserID(r.Context()), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *App) forgetFact(w http.ResponseWriter, r *http.Request) {
	if err := a.Memory.Forget(r.Context(), UserID(r.Context()), r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *App) forgetAll(w http.ResponseWriter, r *http.Request) {
	if err := a.Memory.ForgetAll(r.Context(), UserID(r.Context())); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// stopReply stops a streaming reply, whichever instance runs it.
func (a *App) stopReply(w http.ResponseWriter, r *http.Request) {
	if err := a.Chat.Stop(r.Context(), UserID(r.Context()), sessionID(r), r.PathValue("replyId")); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"stopping": true})
}

// sessionID reads {id} from the path and notes it for the request log.
func sessionID(r *http.Request) string {
	id := r.PathValue("id")
	if ids.Valid(id) {
		info(r.Context()).sessionID = id
	}
	return id
}

// ifMatchOf is the version an append is conditioned on: the If-Match
// header (one quoted version) or the body's ifMatch; 400 if they differ.
func ifMatchOf(r *http.Request, body string) (string, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return body, nil
	}
	v, err := strconv.Unquote(h)
	if err != nil || v == "" || strings.ContainsAny(v, `",`) {
		return "", errs.Errorf(errs.EINVALID, "If-Match: one version as GET …/context returned it, in quotes")
	}
	if body != "" && body != v {
		return "", errs.Errorf(errs.EINVALID, "If-Match and ifMatch name different versions")
	}
	return v, nil
}

// compactionRange is a range of messages a summary folds in.
type compactionRange struct {
	FromSeq int `json:"fromSeq"`
	ToSeq   int `json:"toSeq"`
}

func dueRange(p *history.CompactionPlan) *compactionRange {
	if p == nil {
		return nil
	}
	return &compactionRange{FromSeq: p.StartSeq, ToSeq: p.EndSeq}
}
