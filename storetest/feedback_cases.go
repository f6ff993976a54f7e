package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// testFeedback: history.SetFeedback on the store: a reply is rated, rated
// again (the same rating changes nothing, another replaces it), its
// rating withdrawn, with the session's counts kept; a question, another
// user's session, a missing message and bad input are refused.
func testFeedback(t *testing.T, e *Env) {
	ctx := context.Background()
	repo, ok := e.DB.(history.FeedbackStore)
	if !ok {
		t.Fatal("the store does not implement history.FeedbackStore")
	}
	s := e.NewSession(t, "alice")
	q := e.Say(t, s, history.RoleUser, "a question")
	r := e.Say(t, s, history.RoleAssistant, "a reply")
	t0, t1 := Epoch, Epoch.Add(time.Minute)
	set := func(at time.Time, user, message string, fb *history.Feedback) (*history.Message, error) {
		return history.SetFeedback(ctx, repo, at, user, s.ID, message, fb)
	}
	counts := func(up, down int) {
		t.Helper()
		if got := e.Reload(t, s).Feedback; got.Up != up || got.Down != down {
			t.Fatalf("session counts %+v, want %d up, %d down", got, up, down)
		}
	}
	m := Must[*history.Message](t)(set(t0, "alice", r.ID, &history.Feedback{Rating: history.RatingUp, Comment: "  spot on "}))
	if m.Feedback == nil || m.Feedback.Rating != history.RatingUp || m.Feedback.Comment != "spot on" || !m.Feedback.At.Equal(t0) {
		t.Fatalf("rated: %+v", m.Feedback)
	}
	counts(1, 0)
	m = Must[*history.Message](t)(set(t1, "alice", r.ID, &history.Feedback{Rating: history.RatingUp, Comment: "spot on"}))
	if !m.Feedback.At.Equal(t0) {
		t.Fatalf("the same rating again changed it: %+v", m.Feedback)
	}
	counts(1, 0)
	Must[*history.Message](t)(set(t1, "alice", r.ID, &history.Feedback{Rating: history.RatingDown}))
	counts(0, 1)
	listed := Must[[]history.Message](t)(e.DB.ListMessages(ctx, history.ListQuery{SessionID: s.ID, Limit: 10}))
	if len(listed) != 2 || listed[1].Feedback == nil || listed[1].Feedback.Rating != history.RatingDown || listed[1].Feedback.Comment != "" || !listed[1].Feedback.At.Equal(t1) {
		t.Fatalf("listed: %+v", listed)
	}
	if m := Must[*history.Message](t)(set(t1, "alice", r.ID, nil)); m.Feedback != nil {
		t.Fatalf("withdrawn: %+v", m.Feedback)
	}
	counts(0, 0)
	Must[*history.Message](t)(set(t1, "alice", r.ID, nil)) // withdrawn twice: no error
	counts(0, 0)

	_, err := set(t1, "alice", q.ID, &history.Feedback{Rating: history.RatingUp})
	WantCode(t, err, errs.EINVALID)
	_, err = set(t1, "bob", r.ID, &history.Feedback{Rating: history.RatingUp})
	WantCode(t, err, errs.ENOTFOUND)
	_, err = set(t1, "bob", "no-such-message", &history.Feedback{Rating: history.RatingUp})
	if err == nil || !strings.Contains(err.Error(), "session") {
		t.Fatalf("another user's session with a made-up message: %v, want the session's not-found", err)
	}
	_, err = set(t1, "alice", "no-such-message", &history.Feedback{Rating: history.RatingUp})
	WantCode(t, err, errs.ENOTFOUND)
	for _, bad := range []*history.Feedback{{Rating: "meh"}, {Rating: history.RatingUp, Comment: strings.Repeat("x", history.MaxFeedbackComment+1)}} {
		_, err = set(t1, "alice", r.ID, bad)
		WantCode(t, err, errs.EINVALID)
	}
	_, err = history.SetFeedback(ctx, repo, t1, "alice", "bad/id", r.ID, nil)
	WantCode(t, err, errs.EINVALID)
	counts(0, 0)
}
