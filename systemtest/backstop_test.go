package systemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatmemory/backend/app"
)

// firstWrites are the ways a user's first request can store something of
// theirs, each the only thing that user ever does.
var firstWrites = []struct {
	name  string
	first func(h *harness, u user)
}{
	{"POST /sessions, an append and feedback", func(h *harness, u user) {
		id := h.newSession(u.token, map[string]any{"title": "bees"})
		h.do("POST", "/sessions/"+id+"/messages", u.token, map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": "I keep bees."},
			map[string]any{"role": "assistant", "content": "Noted."},
		}}).want(h.t, 201)
		msgs := h.messages(u.token, id)
		h.do("PUT", "/sessions/"+id+"/messages/"+msgs[len(msgs)-1].ID+"/feedback", u.token, map[string]any{"rating": "up"}).want(h.t, 200)
	}},
	{"POST /chat without sessionId", func(h *harness, u user) {
		h.do("POST", "/chat", u.token, map[string]any{"message": "I keep bees."}).want(h.t, 200)
	}},
	{"POST /ai-sdk/chat", func(h *harness, u user) {
		msg := map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "I keep bees."}}}
		h.do("POST", "/ai-sdk/chat", u.token, map[string]any{"id": "bees", "messages": []any{msg}, "trigger": "submit-message"}).want(h.t, 200)
	}},
	{"PATCH /memory/profile", func(h *harness, u user) {
		h.do("PATCH", "/memory/profile", u.token, map[string]any{"work": "Beekeeper."}).want(h.t, 200)
	}},
	{"PATCH /memory", func(h *harness, u user) {
		h.do("PATCH", "/memory", u.token, map[string]any{"enabled": false}).want(h.t, 200)
	}},
	{"GET /search (its usage)", func(h *harness, u user) {
		h.do("GET", "/search?q=bees", u.token, nil).want(h.t, 200)
	}},
}

// TestBackstopFindsEveryFirstWrite: whatever a user's first request
// stored (a session, a turn that creates its session, an AI SDK chat, a
// memory profile or setting, a search's usage), their account is recorded
// in the same commit, so that once they are deleted in Auth without an
// event the sweep's backstop erases everything of theirs 30 days on.
// Another user, still in Auth, keeps their data. Both stores.
func TestBackstopFindsEveryFirstWrite(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory, c.Embeddings = true, true })
		ctx := context.Background()
		users := make([]user, len(firstWrites))
		for i, fw := range firstWrites {
			users[i] = h.signUp()
			fw.first(h, users[i])
		}
		kept := h.signUp()
		h.do("POST", "/chat", kept.token, map[string]any{"message": "I keep wasps."}).want(t, 200)
		h.idle()
		for _, u := range users {
			h.deleteUser(u.uid)
		}
		h.clock.Advance(31 * 24 * time.Hour)
		h.app.Sweep(ctx, false)
		for i, u := range users {
			t.Run(firstWrites[i].name, func(t *testing.T) { h.nothingLeftOf(t, u) })
		}
		var export struct{ Sessions []any }
		h.do("GET", "/account/export", kept.token, nil).want(t, 200).decode(t, &export)
		if len(export.Sessions) != 1 {
			t.Errorf("a user still in Auth has %d sessions after the sweep, want 1", len(export.Sessions))
		}
	})
}
