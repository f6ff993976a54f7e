package history_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestSetFeedback: a user rates a reply up or down with a comment, rates
// it again (the same rating changes nothing, another replaces it) and
// withdraws it, and the session counts its ratings throughout; a bad
// rating, comment or id, a question, a message the session does not hold
// and another user's reply are refused, naming why, and change nothing.
func TestSetFeedback(t *testing.T) {
	ctx := context.Background()
	db := inprocdb.New()
	env := storetest.NewEnv(t, db)
	s := env.NewSession(t, "alice")
	question := env.Say(t, s, history.RoleUser, "is this right?")
	reply := env.Say(t, s, history.RoleAssistant, "yes")
	now := storetest.Epoch.Add(time.Hour)
	up := func(comment string) *history.Feedback {
		return &history.Feedback{Rating: history.RatingUp, Comment: comment}
	}
	down := &history.Feedback{Rating: history.RatingDown}
	for _, tc := range []struct {
		name      string
		user, msg string
		session   string // "": s
		fb        *history.Feedback
		want      string // the reply's rating and comment after it
		up, down  int    // the session's counts after it
		code      errs.Code
		message   string // what a refusal says
	}{
		{name: "up, with a comment", user: "alice", msg: reply.ID, fb: up("  spot on "), want: "up/spot on", up: 1},
		{name: "the same again", user: "alice", msg: reply.ID, fb: up("spot on"), want: "up/spot on", up: 1},
		{name: "down instead", user: "alice", msg: reply.ID, fb: down, want: "down/", down: 1},
		{name: "withdrawn", user: "alice", msg: reply.ID, want: "", up: 0},
		{name: "withdrawn again", user: "alice", msg: reply.ID, want: "", up: 0},
		{name: "a rating that is not one", user: "alice", msg: reply.ID, fb: &history.Feedback{Rating: "meh"}, code: errs.EINVALID, message: "rating"},
		{name: "a comment too long", user: "alice", msg: reply.ID, fb: up(strings.Repeat("é", history.MaxFeedbackComment+1)), code: errs.EINVALID, message: "comment"},
		{name: "no message id", user: "alice", msg: "", fb: down, code: errs.EINVALID, message: "messageId"},
		{name: "a bad session id", user: "alice", msg: reply.ID, session: "a/b", fb: down, code: errs.EINVALID},
		{name: "a question", user: "alice", msg: question.ID, fb: down, code: errs.EINVALID, message: "only replies"},
		{name: "a message the session does not hold", user: "alice", msg: "nosuchmessage", fb: down, code: errs.ENOTFOUND, message: "nosuchmessage"},
		{name: "another user's reply", user: "bob", msg: reply.ID, fb: down, code: errs.ENOTFOUND},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeReply := env.Reload(t, s), replyOf(t, env, s, reply.ID)
			session := tc.session
			if session == "" {
				session = s.ID
			}
			_, err := history.SetFeedback(ctx, db, now, tc.user, session, tc.msg, tc.fb)
			if tc.code != "" {
				if errs.CodeOf(err) != tc.code || !strings.Contains(errs.Message(err), tc.message) {
					t.Fatalf("got %v, want %s naming %q", err, tc.code, tc.message)
				}
				tc.up, tc.down, tc.want = before.Feedback.Up, before.Feedback.Down, ratingOf(beforeReply)
			} else if err != nil {
				t.Fatal(err)
			}
			got := replyOf(t, env, s, reply.ID)
			if ratingOf(got) != tc.want || (got.Feedback != nil && !got.Feedback.At.Equal(now)) {
				t.Errorf("the reply's feedback: %+v, want %q", got.Feedback, tc.want)
			}
			if after := env.Reload(t, s); after.Feedback.Up != tc.up || after.Feedback.Down != tc.down {
				t.Errorf("the session counts %+v, want up %d down %d", after.Feedback, tc.up, tc.down)
			}
		})
	}
}

// replyOf is message id of s, as stored.
func replyOf(t *testing.T, env *storetest.Env, s *sessions.Session, id string) *history.Message {
	t.Helper()
	for _, m := range env.All(t, s) {
		if m.ID == id {
			return &m
		}
	}
	t.Fatalf("no message %s", id)
	return nil
}

// ratingOf is m's rating and comment as "rating/comment" ("": none).
func ratingOf(m *history.Message) string {
	if m.Feedback == nil {
		return ""
	}
	return string(m.Feedback.Rating) + "/" + m.Feedback.Comment
}
