package functions

import (
	"net/http"
)

// exportAccount streams everything the caller owns as one JSON document.
func (a *App) exportAccount(w http.ResponseWriter, r *http.Request) {
	uid := UserID(r.Context())
	cw := &countingWriter{w: w}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="chat-export.json"`)
	w.Header().Set("Cache-Control", "no-store")
	if err := a.Privacy.Export(r.Context(), uid, cw); err != nil {
		if cw.n == 0 {
			a.writeError(w, r, err)
			return
		}
		// The status is sent; the document stays unterminated, so the
		// client cannot mistake it for a complete export.
		a.logFailure(r, StatusOf(err), err)
	}
}

type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// eraseAccount deletes everything the caller owns, at once and for good.
func (a *App) eraseAccount(w http.ResponseWriter, r *http.Request) {
	e, err := a.Privacy.Erase(r.Context(), UserID(r.Context()))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}
