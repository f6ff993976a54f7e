package app

import (
	"context"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
)

// AfterTurn is the deployed function for the creation of an after-turn
// job (a Firestore trigger on chat_sessions/{session}/jobs/{job}, which
// Eventarc delivers as a CloudEvent whose subject names the document):
// it runs the job unless the turn that wrote it holds it (it usually
// does, and is done by then). An error makes the platform retry (the
// function is deployed with --retry): a job still held is tried again
// later, and one never finished is run by the sweep.
func AfterTurn(ctx context.Context, e event.Event) error {
	a, err := defaultApp()
	if err != nil {
		return err
	}
	return a.RunJobEvent(ctx, e)
}

// RunJobEvent runs the job e's subject names (see AfterTurn).
func (a *App) RunJobEvent(ctx context.Context, e event.Event) error {
	doc, _ := e.Extensions()["document"].(string) // the document's path; the subject has it too
	if doc == "" {
		doc = e.Subject()
	}
	sessionID, jobID, ok := jobDocument(doc)
	if !ok {
		// Retrying cannot help an event that names no job: log, do not fail.
		a.Edge.Log.ErrorContext(ctx, "an after-turn event that names no job", "type", e.Type(), "subject", e.Subject())
		return nil
	}
	return a.Chat.RunJob(ctx, sessionID, jobID)
}

// jobDocument reads a job's session and id from the path of its
// document ("chat_sessions/{session}/jobs/{job}", after "documents/" in
// an event's subject).
func jobDocument(subject string) (sessionID, jobID string, ok bool) {
	p := strings.Split(strings.TrimPrefix(subject, "documents/"), "/")
	if len(p) != 4 || p[0] != "chat_sessions" || p[2] != "jobs" || p[1] == "" || p[3] == "" {
		return "", "", false
	}
	return p[1], p[3], true
}
