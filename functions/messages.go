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
	"github.com/chatmemory/backend/llm"
)

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
	if a.Search != nil { // how many of them search will find, once embedded after the answer
		body["searchable"] = chat.Searchable(res.Messages)
	}
	writeJSON(w, http.StatusCreated, body)
	// The app has its answer; its exchanges are embedded, and its summary
	// made when due, after it.
	http.NewResponseController(w).Flush()
	a.Chat.AfterAppend(context.WithoutCancel(r.Context()), res)
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
