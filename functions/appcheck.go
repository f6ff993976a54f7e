package functions

import (
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"firebase.google.com/go/v4/appcheck"

	"github.com/chatmemory/backend/kernel/errs"
)

// AppCheckMode is what the API does with Firebase App Check tokens
// (APP_CHECK).
type AppCheckMode string

const (
	// AppCheckOff ignores the X-Firebase-AppCheck header (the default,
	// and what local development without App Check needs).
	AppCheckOff AppCheckMode = "off"
	// AppCheckMonitor checks every token and logs and counts requests
	// with a missing or invalid one, but serves them: the step before
	// enforcing, to see which clients would be refused.
	AppCheckMonitor AppCheckMode = "monitor"
	// AppCheckEnforce refuses requests without a valid token (401,
	// unauthenticated).
	AppCheckEnforce AppCheckMode = "enforce"
)

// AppChecker verifies an App Check token; firebase-admin-go's
// *appcheck.Client does (its signature check uses keys it caches).
type AppChecker interface {
	VerifyToken(token string) (*appcheck.DecodedAppCheckToken, error)
}

// AppCheck checks the X-Firebase-AppCheck header of API requests.
type AppCheck struct {
	Mode   AppCheckMode
	Client AppChecker
	// AppIDs, if set, are the apps whose tokens are accepted; a valid
	// token of another app of the project is invalid here.
	AppIDs []string

	missing, invalid atomic.Int64
}

// AppCheckHeader is where clients send their App Check token.
const AppCheckHeader = "X-Firebase-AppCheck"

// Verdicts of a request's App Check token.
const (
	appCheckValid   = "valid"
	appCheckMissing = "missing"
	appCheckInvalid = "invalid"
)

// Counts returns how many requests came without a token, and with an
// invalid one, since the App started (in monitor and enforce modes).
func (c *AppCheck) Counts() (missing, invalid int64) {
	return c.missing.Load(), c.invalid.Load()
}

// checkApp admits a request by its App Check token as the mode says, and
// notes the verdict for the request log. It reports whether to go on.
func (a *App) checkApp(w http.ResponseWriter, r *http.Request) bool {
	c := a.AppCheck
	if c == nil || c.Mode == AppCheckOff || c.Mode == "" {
		return true
	}
	v, why := c.verdict(r.Header.Get(AppCheckHeader))
	info(r.Context()).appCheck = v
	if v == appCheckValid {
		return true
	}
	counter := &c.missing
	if v == appCheckInvalid {
		counter = &c.invalid
	}
	n := counter.Add(1)
	reason := ""
	if why != nil {
		reason = why.Error()
	}
	if c.Mode == AppCheckMonitor {
		a.Log.WarnContext(r.Context(), "App Check token "+v+" (monitor mode: served)", "appCheck", v, "count", n, "reason", reason)
		return true
	}
	a.Log.WarnContext(r.Context(), "App Check token "+v+": refused", "appCheck", v, "count", n, "reason", reason)
	a.writeError(w, r, errs.Errorf(errs.EUNAUTHENTICATED, "this app could not be verified: send a valid App Check token in %s", AppCheckHeader))
	return false
}

// verdict checks token; it never panics on a token it cannot read.
func (c *AppCheck) verdict(token string) (verdict string, why error) {
	if token == "" {
		return appCheckMissing, nil
	}
	defer func() {
		if p := recover(); p != nil {
			verdict, why = appCheckInvalid, fmt.Errorf("unreadable token: %v", p)
		}
	}()
	t, err := c.Client.VerifyToken(token)
	switch {
	case err != nil:
		return appCheckInvalid, err
	case len(c.AppIDs) > 0 && !slices.Contains(c.AppIDs, t.AppID):
		return appCheckInvalid, fmt.Errorf("app %q is not one of APP_CHECK_APP_IDS", t.AppID)
	}
	return appCheckValid, nil
}
