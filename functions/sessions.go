package functions

import (
	"context"
	"net/http"

	"github.com/chatmemory/backend/kernel/ids"
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

// sessionID reads {id} from the path and notes it for the request log.
func sessionID(r *http.Request) string {
	id := r.PathValue("id")
	if ids.Valid(id) {
		info(r.Context()).sessionID = id
	}
	return id
}
