package storetest

import (
	"context"
	"math"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// testRecall: exchanges are saved only under a live session of their
// user, found nearest first within the user's sessions (or one of them)
// with their session and messages, replaced when saved again, and gone
// with a purged session.
func testRecall(t *testing.T, e *Env) {
	ctx := context.Background()
	store, ok := e.DB.(recall.Store)
	if !ok {
		t.Fatal("the store does not implement recall.Store")
	}
	exchange := func(s *sessions.Session, q, a string, v ...float32) recall.Exchange {
		t.Helper()
		qm := e.Say(t, s, history.RoleUser, q)
		am := e.Say(t, s, history.RoleAssistant, a)
		return recall.Exchange{UserID: s.UserID, SessionID: s.ID, QuestionID: qm.ID, Answer: am.ID, Seq: qm.Seq,
			CreatedAt: Epoch, Model: "test/4", Vector: v}
	}
	one := e.NewSession(t, "alice")
	two := e.NewSession(t, "alice")
	bobs := e.NewSession(t, "bob")
	trains := exchange(one, "trains to Oslo?", "the night train", 1, 0, 0, 0)
	hotels := exchange(one, "hotels?", "near the station", 0.8, 0.6, 0, 0)
	museums := exchange(two, "museums?", "the Munch museum", 0, 1, 0, 0)
	secret := exchange(bobs, "bob's", "secret", 1, 0, 0, 0)
	for _, x := range []recall.Exchange{trains, hotels, museums, secret, hotels} { // hotels twice: replaced
		noErr(t, store.SaveExchange(ctx, x))
	}
	missing := trains
	missing.SessionID = "no-such-session"
	WantCode(t, store.SaveExchange(ctx, missing), errs.ENOTFOUND)
	stolen := secret
	stolen.UserID = "alice"
	WantCode(t, store.SaveExchange(ctx, stolen), errs.ENOTFOUND)

	hits, err := store.Nearest(ctx, "alice", "", []float32{1, 0, 0, 0}, 10)
	noErr(t, err)
	var order []string
	for _, h := range hits {
		order = append(order, h.Exchange.Answer)
	}
	want := []string{trains.Answer, hotels.Answer, museums.Answer}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("nearest: %v, want %v", order, want)
	}
	if h := hits[1]; math.Abs(h.Distance-0.2) > 1e-4 || h.Session == nil || h.Session.ID != one.ID ||
		h.Question == nil || h.Question.Content != "hotels?" || h.Reply == nil || h.Reply.Content != "near the station" ||
		h.Exchange.QuestionID != hotels.QuestionID || h.Exchange.Seq != hotels.Seq {
		t.Fatalf("a hit: %+v", h)
	}
	hits, err = store.Nearest(ctx, "alice", two.ID, []float32{1, 0, 0, 0}, 10)
	noErr(t, err)
	if len(hits) != 1 || hits[0].Exchange.Answer != museums.Answer {
		t.Fatalf("in one session: %+v", hits)
	}
	if hits, _ := store.Nearest(ctx, "alice", "", []float32{1, 0, 0, 0}, 1); len(hits) != 1 {
		t.Fatalf("k=1: %d hits", len(hits))
	}
	if hits, _ := store.Nearest(ctx, "carol", "", []float32{1, 0, 0, 0}, 10); len(hits) != 0 {
		t.Fatalf("carol found %+v", hits)
	}

	// A deleted session takes no new exchanges; a purged one keeps none.
	Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", two.ID))
	WantCode(t, store.SaveExchange(ctx, museums), errs.ENOTFOUND)
	Must[int](t)(e.Sessions.Purge(ctx, "alice", two.ID))
	hits, err = store.Nearest(ctx, "alice", "", []float32{0, 1, 0, 0}, 10)
	noErr(t, err)
	for _, h := range hits {
		if h.Exchange.SessionID == two.ID {
			t.Fatalf("an exchange of a purged session: %+v", h)
		}
	}
}
