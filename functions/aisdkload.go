package functions

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// uiMessageOut is a UIMessage as useChat's messages hold it.
type uiMessageOut struct {
	ID       string           `json:"id"`
	Role     string           `json:"role"`
	Parts    []map[string]any `json:"parts"`
	Metadata map[string]any   `json:"metadata,omitempty"`
	// first is the stored message it starts with: its versions are this one's.
	first history.Message
}

// aiChatMessages answers a chat's active branch as UIMessages, newest page
// first (each page oldest first): a user's message under the id its
// client gave it; a reply, with the tool calls it made, their results and
// the replies after them, as one assistant message under the first
// reply's id, as the stream built it. A chat not started yet has none.
func (a *App) aiChatMessages(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	userID := UserID(r.Context())
	sessionID, err := a.chatSession(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err := a.Sessions.Get(r.Context(), userID, sessionID)
	if errs.CodeOf(err) == errs.ENOTFOUND {
		writeJSON(w, http.StatusOK, map[string]any{"messages": []uiMessageOut{}})
		return
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	page, err := a.History.Page(r.Context(), s, history.PageRequest{Order: history.NewestFirst, Limit: limit, PageToken: r.URL.Query().Get("pageToken")})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	msgs := slices.Clone(page.Messages)
	slices.Reverse(msgs)
	out := uiMessagesOf(s.ID, msgs)
	if err := a.addVersions(r.Context(), s.ID, msgs, out); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out, "nextPageToken": page.NextPageToken})
}

// uiMessagesOf groups stored messages (oldest first) into UIMessages: a
// user's with metadata sessionId and seq (a search hit names its seq).
func uiMessagesOf(sessionID string, msgs []history.Message) []uiMessageOut {
	out := []uiMessageOut{}
	for _, m := range msgs {
		switch m.Role {
		case history.RoleUser:
			out = append(out, uiMessageOut{ID: uiID(m), Role: "user", Parts: userParts(m),
				Metadata: map[string]any{"sessionId": sessionID, "seq": m.Seq}, first: m})
		case history.RoleAssistant, history.RoleTool:
			if n := len(out); n == 0 || out[n-1].Role != "assistant" {
				out = append(out, uiMessageOut{ID: m.ID, Role: "assistant", Parts: []map[string]any{}, first: m})
			}
			addToMessage(&out[len(out)-1], sessionID, m)
		}
	}
	return out
}

// addVersions gives each UIMessage whose first message has versions (a
// regenerated reply, an edited question) metadata.versions, each
// version's UIMessage id and seq, oldest first, and metadata.activeVersion,
// the index of the one shown. An app shows another with POST
// /sessions/{sessionId}/branch {"seq"} and loads the chat again. The
// versions the page does not hold are read, side by side.
func (a *App) addVersions(ctx context.Context, sessionID string, page []history.Message, out []uiMessageOut) error {
	known := map[int]history.Message{}
	for _, m := range page {
		known[m.Seq] = m
	}
	var missing []int
	for _, u := range out {
		for _, seq := range u.first.Siblings {
			if _, ok := known[seq]; !ok {
				missing = append(missing, seq)
			}
		}
	}
	read, err := a.History.MessagesAt(ctx, sessionID, missing)
	if err != nil {
		return err
	}
	for _, m := range read {
		known[m.Seq] = m
	}
	for i := range out {
		setVersions(&out[i], sessionID, known)
	}
	return nil
}

// setVersions sets u's versions from the messages known by seq: those of
// its first message's role (a version may have been trimmed away).
func setVersions(u *uiMessageOut, sessionID string, known map[int]history.Message) {
	var versions []map[string]any
	active := 0
	for _, seq := range u.first.Siblings {
		if m, ok := known[seq]; ok && m.Role == u.first.Role {
			if seq == u.first.Seq {
				active = len(versions)
			}
			versions = append(versions, map[string]any{"id": uiID(m), "seq": seq})
		}
	}
	if len(versions) < 2 {
		return
	}
	if u.Metadata == nil {
		u.Metadata = map[string]any{"sessionId": sessionID, "seq": u.first.Seq}
	}
	u.Metadata["versions"], u.Metadata["activeVersion"] = versions, active
}

// uiID is the id of the UIMessage a stored message starts: a user's under
// the id its client gave it.
func uiID(m history.Message) string {
	if m.Role == history.RoleUser && m.ClientMessageID != "" && m.ID == history.KeyedMessageID(m.ClientMessageID, 0) {
		return m.ClientMessageID
	}
	return m.ID
}

// addToMessage adds a stored reply or tool result to an assistant UIMessage.
func addToMessage(u *uiMessageOut, sessionID string, m history.Message) {
	if m.Role == history.RoleTool {
		for _, p := range u.Parts {
			if p["toolCallId"] == m.ToolCallID {
				p["state"], p["output"] = "output-available", outputValue(m.Content)
			}
		}
		return
	}
	u.Parts = append(u.Parts, map[string]any{"type": "step-start"})
	if m.Content != "" {
		u.Parts = append(u.Parts, map[string]any{"type": "text", "text": m.Content, "state": "done"})
	}
	for _, c := range m.ToolCalls {
		u.Parts = append(u.Parts, map[string]any{"type": "tool-" + c.Function.Name, "toolCallId": c.ID, "state": "input-available", "input": toolInput(c.Function.Arguments)})
	}
	u.Metadata = replyMetadata(sessionID, m)
}

// outputValue is a stored tool result as the client gave it: JSON as the
// value it was, other text as a string.
func outputValue(content string) any {
	var v any
	if t := strings.TrimSpace(content); t != "" && (t[0] == '{' || t[0] == '[') && json.Unmarshal([]byte(t), &v) == nil {
		return v
	}
	return content
}

// aiChatResume streams the chat's reply in progress from its start (its
// draft) to its end, as a replay; 204 when none is in progress.
func (a *App) aiChatResume(w http.ResponseWriter, r *http.Request) {
	userID := UserID(r.Context())
	sessionID, err := a.chatSession(r.Context(), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.Chat.InProgress(r.Context(), userID, sessionID)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if p == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ui := newUIStream(w, r)
	textID := "text-" + p.ReplyID
	ui.begin(p.ReplyID, map[string]any{"sessionId": sessionID})
	ui.send(map[string]any{"type": "text-start", "id": textID})
	answer, err := a.Chat.Follow(r.Context(), userID, sessionID, *p, func(delta string) {
		ui.send(map[string]any{"type": "text-delta", "id": textID, "delta": delta})
	})
	if err != nil {
		ui.fail(err)
		return
	}
	ui.finish(textID, sessionID, *answer)
}

// aiChatStop stops the chat's reply in progress: it is stored as far as it
// got. 404 when none is.
func (a *App) aiChatStop(w http.ResponseWriter, r *http.Request) {
	userID := UserID(r.Context())
	sessionID, err := a.chatSession(r.Context(), r.PathValue("id"))
	if err == nil {
		err = a.Chat.StopInProgress(r.Context(), userID, sessionID)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
