package sessions

import "github.com/chatmemory/backend/kernel/errs"

// NotFound is the error for a session that does not exist and, identically,
// for another user's session: a caller cannot tell the two apart.
func NotFound(id string) *errs.Error {
	return errs.Errorf(errs.ENOTFOUND, "session %q not found", id)
}
