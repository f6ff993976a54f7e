// Package chatmemory registers the backend's Cloud Functions, and nothing
// else: the handlers live in package functions, and cmd/server serves the
// same handlers locally.
package chatmemory

import (
	ff "github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/chatmemory/backend/app"
)

func init() {
	// One HTTP function serves every endpoint under its path (/chat,
	// /sessions/..., /account/..., /healthz).
	ff.HTTP("api", app.Serve)
	// The daily retention sweep, triggered by Cloud Scheduler via Pub/Sub.
	ff.CloudEvent("sweep", app.Sweep)
	// Firebase Auth's user-deleted event (a 1st-gen trigger, handed over
	// as a CloudEvent): the account's data is erased.
	ff.CloudEvent("userDeleted", app.UserDeleted)
	// The work after each reply (titles, learning, search's index,
	// summaries, charges), when the instance that answered did not finish
	// it: a Firestore trigger on the creation of its job (chat.Job).
	ff.CloudEvent("afterTurn", app.AfterTurn)
}
