package functions

import (
	"net/http"

	"github.com/chatmemory/backend/chat"
)

// listModels answers GET /models: the chat models a session may choose
// (its `model` at creation or with PATCH), each with its context size
// and its price when one is known, the default first.
func (a *App) listModels(w http.ResponseWriter, r *http.Request) {
	models, def := []ChatModel{}, ""
	for _, m := range a.Models {
		if p := priceOf(a.Models, m.Name); m.Price == nil && !p.Zero() {
			m.Price = &p
		}
		models = append(models, m)
	}
	if len(models) > 0 {
		def = models[0].Name
	}
	writeJSON(w, http.StatusOK, map[string]any{"default": def, "models": models})
}

// usage answers GET /usage: where the caller stands against the limits
// now (today's tokens, this minute's turns and appended messages, and when
// each resets) and today's bill by model (input, cached and uncached,
// output, dollars), from one batched read, and what their attachments take
// of their storage quota.
func (a *App) usage(w http.ResponseWriter, r *http.Request) {
	price := func(model string) chat.Price { return priceOf(a.Models, model) }
	st, err := a.Chat.Standing(r.Context(), UserID(r.Context()), price)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	files, err := a.fileUsage(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		*chat.Standing
		Attachments *fileUsage `json:"attachments,omitempty"`
	}{st, files})
}

// fileUsage is what a user's attachments take of their quota.
type fileUsage struct {
	StoredBytes int64 `json:"storedBytes"`
	QuotaBytes  int64 `json:"quotaBytes"`
	MaxFile     int64 `json:"maxFileBytes"`
}

func (a *App) fileUsage(r *http.Request) (*fileUsage, error) {
	if a.Attachments == nil {
		return nil, nil
	}
	used, quota, err := a.Attachments.StoredBytes(r.Context(), UserID(r.Context()))
	if err != nil {
		return nil, err
	}
	return &fileUsage{StoredBytes: used, QuotaBytes: quota, MaxFile: a.Attachments.MaxFile()}, nil
}
