package functions

import (
	"net/http"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
)

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
