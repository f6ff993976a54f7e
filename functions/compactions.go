package functions

import (
	"net/http"

	"github.com/chatmemory/backend/kernel/errs"
)

// recordBody is what POST …/compactions takes.
type recordBody struct {
	FromSeq *int   `json:"fromSeq"`
	ToSeq   *int   `json:"toSeq"`
	Summary string `json:"summary"`
}

// recordCompaction answers POST /sessions/{id}/compactions: an app with
// its own model stores a summary it made of messages fromSeq..toSeq (the
// range GET …/context names as compactionDue), used by the next context
// as the server's own: 201, or 200 when the same summary was stored
// before.
func (a *App) recordCompaction(w http.ResponseWriter, r *http.Request) {
	var b recordBody
	if err := a.decode(r, &b); err != nil {
		a.writeError(w, r, err)
		return
	}
	if b.FromSeq == nil || b.ToSeq == nil {
		a.writeError(w, r, errs.Errorf(errs.EINVALID, "fromSeq and toSeq are required"))
		return
	}
	c, replayed, err := a.History.RecordSummary(r.Context(), UserID(r.Context()), sessionID(r), *b.FromSeq, *b.ToSeq, b.Summary)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, c)
}
