package functions

import (
	"net/http"
)

// listModels answers GET /models: the chat models a session may choose
// (its `model` at creation or with PATCH), each with its context window,
// the default first.
func (a *App) listModels(w http.ResponseWriter, r *http.Request) {
	models, def := a.Models, ""
	if len(models) > 0 {
		def = models[0].Name
	} else {
		models = []ChatModel{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"default": def, "models": models})
}

// usage answers GET /usage: where the caller stands against the limits
// now (today's tokens, this minute's turns and appended messages, and when
// each resets), from one batched read.
func (a *App) usage(w http.ResponseWriter, r *http.Request) {
	st, err := a.Chat.Standing(r.Context(), UserID(r.Context()))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
