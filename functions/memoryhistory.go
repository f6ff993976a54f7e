package functions

import (
	"net/http"

	"github.com/chatmemory/backend/longterm"
)

// patchHistory writes or forgets tiers of the caller's episodic history.
func (a *App) patchHistory(w http.ResponseWriter, r *http.Request) {
	var p longterm.HistoryPatch
	if err := a.decode(r, &p); err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := a.Memory.UpdateHistory(r.Context(), UserID(r.Context()), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
