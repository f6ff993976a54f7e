package systemtest_test

import (
	"strings"
	"testing"
)

// TestFeedback: a user rates their replies up or down, with a comment;
// the listing, the session's counts and the export show it; rating again
// replaces it, the same rating changes nothing, DELETE withdraws it; the
// callable does the same; a question, another user's reply, a made-up
// message and bad bodies are refused.
func TestFeedback(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice, bob := h.signUp(), h.signUp()
		c := h.turn(alice.token, map[string]any{"message": "rate me"})
		sid, reply, question := c.SessionID, c.Reply.ID, c.UserMessage.ID
		path := "/sessions/" + sid + "/messages/" + reply + "/feedback"
		var got struct {
			MessageID string
			Feedback  struct{ Rating, Comment, At string }
		}
		h.do("PUT", path, alice.token, map[string]any{"rating": "up", "comment": "clear and short"}).want(t, 200).decode(t, &got)
		if got.MessageID != reply || got.Feedback.Rating != "up" || got.Feedback.Comment != "clear and short" || got.Feedback.At == "" {
			t.Fatalf("rated: %+v", got)
		}
		h.do("PUT", path, alice.token, map[string]any{"rating": "up", "comment": "clear and short"}).want(t, 200)
		counts := func(up, down int) {
			t.Helper()
			var s struct{ Feedback struct{ Up, Down int } }
			h.do("GET", "/sessions/"+sid, alice.token, nil).want(t, 200).decode(t, &s)
			if s.Feedback.Up != up || s.Feedback.Down != down {
				t.Fatalf("session feedback %+v, want %d up %d down", s.Feedback, up, down)
			}
		}
		counts(1, 0)
		h.do("PUT", path, alice.token, map[string]any{"rating": "down"}).want(t, 200)
		counts(0, 1)
		var page struct {
			Messages []struct {
				ID       string
				Feedback *struct{ Rating string }
			}
		}
		h.do("GET", "/sessions/"+sid+"/messages", alice.token, nil).want(t, 200).decode(t, &page)
		if len(page.Messages) != 2 || page.Messages[1].Feedback == nil || page.Messages[1].Feedback.Rating != "down" || page.Messages[0].Feedback != nil {
			t.Fatalf("listed: %+v", page.Messages)
		}
		r := h.do("GET", "/account/export", alice.token, nil).want(t, 200)
		if !strings.Contains(string(r.body), `"feedback":{"rating":"down"`) {
			t.Errorf("the export lacks the feedback")
		}
		h.do("DELETE", path, alice.token, nil).want(t, 204)
		h.do("DELETE", path, alice.token, nil).want(t, 204)
		counts(0, 0)

		var viaCallable struct {
			Result struct{ Feedback struct{ Rating string } }
		}
		h.do("POST", "/callable/setFeedback", alice.token, map[string]any{"data": map[string]any{"sessionId": sid, "messageId": reply, "rating": "up"}}).
			want(t, 200).decode(t, &viaCallable)
		if viaCallable.Result.Feedback.Rating != "up" {
			t.Fatalf("callable: %+v", viaCallable)
		}
		h.do("POST", "/callable/deleteFeedback", alice.token, map[string]any{"data": map[string]any{"sessionId": sid, "messageId": reply}}).want(t, 200)
		counts(0, 0)

		h.do("PUT", "/sessions/"+sid+"/messages/"+question+"/feedback", alice.token, map[string]any{"rating": "up"}).want(t, 400)
		h.do("PUT", path, bob.token, map[string]any{"rating": "up"}).want(t, 404)
		h.do("DELETE", path, bob.token, nil).want(t, 404)
		h.do("PUT", "/sessions/"+sid+"/messages/nope/feedback", alice.token, map[string]any{"rating": "up"}).want(t, 404)
		for _, bad := range []map[string]any{{"rating": "meh"}, {}, {"rating": "up", "extra": 1}, {"rating": "up", "comment": strings.Repeat("x", 1001)}} {
			h.do("PUT", path, alice.token, bad).want(t, 400)
		}
		h.do("PUT", path, "", map[string]any{"rating": "up"}).want(t, 401)
		counts(0, 0)
	})
}
