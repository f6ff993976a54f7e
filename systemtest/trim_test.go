package systemtest_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/sessions"
)

// TestMessageRetentionOverHTTP: with RETENTION_MESSAGE_DAYS at 30, the
// sweep deletes a session's month-old exchange and nothing newer; the
// session says from which seq its history starts and counts what is
// left; the listing, the context, the next turn, search and the export
// agree, and a deleted message's branch cannot be shown; a session's own period is set at creation or by PATCH (0 removes
// it), and bad values are 400s that change nothing.
func TestMessageRetentionOverHTTP(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.MessageDays = 30; c.Embeddings = true })
		alice := h.signUp()
		id := h.newSession(alice.token, map[string]any{"title": "long-lived", "messageRetentionDays": 3650})
		for _, bad := range []any{-1, 3651, "ten", 1.5} {
			h.do("POST", "/sessions", alice.token, map[string]any{"messageRetentionDays": bad}).want(t, 400)
			h.do("PATCH", "/sessions/"+id, alice.token, map[string]any{"messageRetentionDays": bad}).want(t, 400)
		}
		var s struct {
			MessageRetentionDays int `json:"messageRetentionDays"`
			HistoryFrom          int `json:"historyFrom"`
			MessageCount         int `json:"messageCount"`
		}
		h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).decode(t, &s)
		if s.MessageRetentionDays != 3650 {
			t.Fatalf("a bad PATCH changed the period: %+v", s)
		}
		s.MessageRetentionDays = -1 // omitted when removed
		h.do("PATCH", "/sessions/"+id, alice.token, map[string]any{"messageRetentionDays": 0}).want(t, 200).decode(t, &s)
		if s.MessageRetentionDays != -1 {
			t.Fatalf("PATCH 0 kept the period: %+v", s)
		}

		h.turn(alice.token, map[string]any{"sessionId": id, "message": "Which violin rosin suits a beginner?"})
		h.clock.Advance(20 * sessions.Day)
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "Recommend a hiking trail near Bergen"})
		h.idle()
		h.clock.Advance(15 * sessions.Day)

		dry, err := h.app.Sweep(context.Background(), true)
		if err != nil || len(dry.PlannedTrims) != 1 || dry.PlannedTrims[0].Messages != 2 || dry.PlannedTrims[0].HistoryFrom != 2 {
			t.Fatalf("dry run: %+v %v", dry, err)
		}
		r, err := h.app.Sweep(context.Background(), false)
		if err != nil || r.SessionsTrimmed != 1 || r.MessagesDeleted != 2 {
			t.Fatalf("sweep: %+v %v", r, err)
		}
		if n := sumWhere(t, h.collect()["retention.sweep.sessions"], attribute.String("action", "trim")); n != 1 {
			t.Errorf("sweep metric: %d sessions trimmed, want 1", n)
		}
		h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).decode(t, &s)
		msgs := h.allMessages(alice.token, id)
		if s.HistoryFrom != 2 || s.MessageCount != 2 || len(msgs) != 2 || msgs[0].Seq != 2 || !strings.Contains(msgs[0].Content, "Bergen") {
			t.Fatalf("after the sweep: %+v, %d messages listed", s, len(msgs))
		}
		var ctxResp struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &ctxResp)
		for _, m := range ctxResp.Messages {
			if strings.Contains(m.Content, "rosin") {
				t.Errorf("the context still shows a deleted message: %q", m.Content)
			}
		}
		h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": 1}).want(t, 404) // deleted
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "And one near Oslo?"})
		reqs := h.turnRequests()
		for _, m := range reqs[len(reqs)-1].Messages {
			if strings.Contains(m.Content, "rosin") {
				t.Errorf("the model saw a deleted message: %q", m.Content)
			}
		}
		h.idle()
		var found searchResp
		h.do("GET", "/search?"+url.Values{"q": {"violin rosin"}}.Encode(), alice.token, nil).want(t, 200).decode(t, &found)
		for _, x := range found.Results {
			if strings.Contains(x.Snippet, "rosin") {
				t.Errorf("search finds a deleted message: %+v", x)
			}
		}
		var ex export
		h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &ex)
		if len(ex.Sessions) != 1 || ex.Sessions[0].Session.Bookkeeping.HistoryFrom != 2 || len(ex.Sessions[0].Messages) != 4 || ex.Sessions[0].Messages[0].Seq != 2 {
			t.Errorf("export: %+v", ex.Sessions)
		}
		// A session's own shorter period: the next sweep applies it.
		h.do("PATCH", "/sessions/"+id, alice.token, map[string]any{"messageRetentionDays": 1}).want(t, 200)
		h.clock.Advance(2 * sessions.Day)
		if r, err := h.app.Sweep(context.Background(), false); err != nil || r.MessagesDeleted != 4 {
			t.Fatalf("sweep under the session's own period: %+v %v", r, err)
		}
		h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).decode(t, &s)
		if s.HistoryFrom != 6 || s.MessageCount != 0 || len(h.allMessages(alice.token, id)) != 0 {
			t.Errorf("after its own period: %+v", s)
		}
		h.clock.Advance(time.Minute)
		h.turn(alice.token, map[string]any{"sessionId": id, "message": "Starting afresh"})
	})
}
