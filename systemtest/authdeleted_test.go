package systemtest_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	cloudevent "github.com/cloudevents/sdk-go/v2/event"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/retention"
)

// countedDirectory counts the calls of a directory.
type countedDirectory struct {
	retention.Directory
	calls *atomic.Int64
}

func (d countedDirectory) Missing(ctx context.Context, ids []string) ([]string, error) {
	d.calls.Add(1)
	return d.Directory.Missing(ctx, ids)
}

// seedUser gives u a session with an exchange, a learned memory and
// spend.
func (h *harness) seedUser(u user) {
	h.t.Helper()
	id := h.newSession(u.token, map[string]any{"title": "bees"})
	for range 3 {
		h.do("POST", "/chat", u.token, map[string]any{"sessionId": id, "message": "I keep bees."}).want(h.t, 200)
	}
	var hive struct{ ID string }
	h.upload(u.token, "hive.png", "", testPNG(4, 4), "").want(h.t, 201).decode(h.t, &hive)
	h.do("POST", "/chat", u.token, map[string]any{"sessionId": id, "message": "My hive.", "attachments": []string{hive.ID}}).want(h.t, 200)
	h.idle()
}

// userDeletedEvent is Firebase Auth's user-deleted event for uid, as the
// functions framework hands a 1st-gen legacy event to a CloudEvent
// function: the UserRecord as data.
func userDeletedEvent(t *testing.T, uid string) cloudevent.Event {
	e := cloudevent.New()
	e.SetID("ev-1")
	e.SetType("google.firebase.auth.user.v1.deleted")
	e.SetSource("//firebaseauth.googleapis.com/projects/demo-chatmemory")
	data, _ := json.Marshal(map[string]any{"uid": uid, "email": "x@example.com", "metadata": map[string]any{"createTime": "2026-03-01T00:00:00Z"}})
	if err := e.SetData(cloudevent.ApplicationJSON, data); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestAccountDeletedInAuth: deleting an account in Firebase Auth erases
// its data, through the user-deleted event at once and, when no event
// came, through the daily sweep's backstop, which asks Auth about the
// accounts unseen for 30 days a hundred at a time and about each account
// at most once in 30 days; another user's data stays. Both stores.
func TestAccountDeletedInAuth(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory, c.Embeddings = true, true })
		ctx := context.Background()
		alice, bob, carol := h.signUp(), h.signUp(), h.signUp()
		for _, u := range []user{alice, bob, carol} {
			h.seedUser(u)
		}

		// The event: erased at once; a second delivery is harmless.
		h.deleteUser(alice.uid)
		for range 2 {
			if err := h.app.EraseDeletedUser(ctx, userDeletedEvent(t, alice.uid)); err != nil {
				t.Fatal(err)
			}
		}
		h.nothingLeftOf(t, alice)
		if err := h.app.EraseDeletedUser(ctx, cloudevent.New()); err != nil {
			t.Errorf("an event without a uid is not retried: %v", err)
		}

		// No event for bob: the sweep finds him once he is unseen for 30 days.
		h.deleteUser(bob.uid)
		h.app.Sweep(ctx, false)
		if n := h.lookups.Load(); n != 0 {
			t.Errorf("the sweep asked Auth %d times about accounts seen today", n)
		}
		h.clock.Advance(31 * 24 * time.Hour)
		h.app.Sweep(ctx, false)
		if n := h.lookups.Load(); n != 1 {
			t.Errorf("the sweep asked Auth %d times about 2 accounts, want 1", n)
		}
		h.nothingLeftOf(t, bob)
		var export struct{ Sessions []any }
		h.do("GET", "/account/export", carol.token, nil).want(t, 200).decode(t, &export)
		if len(export.Sessions) != 1 {
			t.Errorf("carol, still in Auth, has %d sessions after the sweep", len(export.Sessions))
		}
		// Carol was seen: the next days' sweeps do not ask about her.
		for range 3 {
			h.clock.Advance(24 * time.Hour)
			h.app.Sweep(ctx, false)
		}
		if n := h.lookups.Load(); n != 1 {
			t.Errorf("%d Auth calls after three more days, want still 1", n)
		}
		h.clock.Advance(30 * 24 * time.Hour)
		h.app.Sweep(ctx, false)
		if n := h.lookups.Load(); n != 2 {
			t.Errorf("%d Auth calls 30 days later, want 2", n)
		}
	})
}
