package functions

import (
	"net/http"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/clock"
)

// usage answers GET /usage: where the caller stands against the limits
// now (today's tokens, this minute's turns and appended messages, and when
// each resets), from one batched read.
func (a *App) usage(w http.ResponseWriter, r *http.Request) {
	st, err := chat.UsageData{Store: a.Store}.Standing(r.Context(), UserID(r.Context()), a.Chat.Limits, clock.Stored(a.Chat.Now))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
