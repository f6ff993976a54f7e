package functions

import (
	"net/http"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
)

// DefaultSearchResults is how many results a search returns without a
// limit.
const DefaultSearchResults = 10

// search answers GET /search?q=…[&sessionId=…][&limit=…]: the caller's
// best matches by meaning and exact phrase, across their active and
// archived sessions or in one of them. A search counts against the
// caller's searches per minute and needs tokens left today, checked before
// anything is embedded; the query's embedding is charged to the caller's
// day as a model call is.
func (a *App) search(w http.ResponseWriter, r *http.Request) {
	if a.Search == nil {
		a.writeError(w, r, errs.Errorf(errs.ENOTFOUND, "search is off on this server (EMBEDDINGS=off)"))
		return
	}
	q := r.URL.Query()
	limit, err := queryInt(r, "limit")
	switch {
	case err != nil:
		a.writeError(w, r, err)
		return
	case !q.Has("limit"):
		limit = DefaultSearchResults
	}
	uid := UserID(r.Context())
	if err := recall.CheckSearch(q.Get("q"), q.Get("sessionId"), limit); err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.Chat.AdmitSearch(r.Context(), uid); err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx, meter := chat.WithMeter(r.Context())
	results, err := a.Search.Search(ctx, uid, q.Get("q"), q.Get("sessionId"), limit)
	a.Chat.Spend(r.Context(), uid, meter.Tokens())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if results == nil {
		results = []recall.Result{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}
