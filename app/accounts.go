package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"firebase.google.com/go/v4/auth"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/retention"
)

// AuthDirectory tells which accounts Firebase Auth still knows: one
// GetUsers call for up to retention.DirectoryBatch of them.
type AuthDirectory struct{ Client *auth.Client }

// Missing returns those of userIDs that Auth does not know.
func (d AuthDirectory) Missing(ctx context.Context, userIDs []string) ([]string, error) {
	ids := make([]auth.UserIdentifier, len(userIDs))
	for i, uid := range userIDs {
		ids[i] = auth.UIDIdentifier{UID: uid}
	}
	res, err := d.Client.GetUsers(ctx, ids)
	if err != nil {
		return nil, errs.Wrap(errs.EUNAVAILABLE, err, "the sign-in service did not answer")
	}
	var missing []string
	for _, id := range res.NotFound {
		if u, ok := id.(auth.UIDIdentifier); ok {
			missing = append(missing, u.UID)
		}
	}
	return missing, nil
}

// authUser is the part of Firebase Auth's UserRecord an event carries
// that the backend reads.
type authUser struct {
	UID string `json:"uid"`
}

// UserDeleted is the deployed function for Firebase Auth's user-deleted
// event (1st gen, whose legacy event the functions framework hands over as
// a CloudEvent with the UserRecord as data): it erases everything the
// account held, as DELETE /account/data would have. An error makes the
// platform retry (the function is deployed with --retry); erasure is
// idempotent.
func UserDeleted(ctx context.Context, e event.Event) error {
	a, err := defaultApp()
	if err != nil {
		return err
	}
	return a.EraseDeletedUser(ctx, e)
}

// EraseDeletedUser erases the data of the account e says was deleted.
func (a *App) EraseDeletedUser(ctx context.Context, e event.Event) error {
	var u authUser
	if err := json.Unmarshal(e.Data(), &u); err != nil || u.UID == "" {
		// Retrying cannot help an event without a uid: log, do not fail.
		a.Edge.Log.ErrorContext(ctx, "a user-deleted event without a uid", "type", e.Type())
		return nil
	}
	start := time.Now()
	er, err := a.Privacy.Erase(ctx, u.UID)
	if err != nil {
		a.Edge.Log.ErrorContext(ctx, "erasing an account deleted in Auth failed; the event is retried", "code", string(errs.CodeOf(err)))
		return fmt.Errorf("erasing an account deleted in Auth: %w", err)
	}
	a.Edge.Log.InfoContext(ctx, "erased an account deleted in Auth", "sessions", er.Sessions, "documents", er.Documents,
		"durationMs", time.Since(start).Milliseconds())
	return nil
}

// EraseDeletedAccounts runs the sweep's backstop (see retention.Backstop)
// within budget and logs what it did; without a Directory it does nothing.
func (a *App) EraseDeletedAccounts(ctx context.Context, budget time.Duration) retention.BackstopReport {
	if a.Backstop == nil {
		return retention.BackstopReport{Complete: true}
	}
	start := time.Now()
	out := func() bool { return ctx.Err() != nil || (budget > 0 && time.Since(start) >= budget-budget/10) }
	r, err := a.Backstop.Run(ctx, out)
	attrs := []any{"checked", r.Checked, "erased", r.Erased, "authCalls", r.AuthCalls, "failed", r.Failed, "complete", r.Complete, "durationMs", r.DurationMs}
	if err != nil {
		a.Edge.Log.ErrorContext(ctx, "erasing accounts deleted in Auth failed", append(attrs, "error", err.Error())...)
	} else {
		a.Edge.Log.InfoContext(ctx, "accounts deleted in Auth", attrs...)
	}
	return r
}
