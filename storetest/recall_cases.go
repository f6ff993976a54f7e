package storetest

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// testRecall: exchanges are saved only under a live session of their
// user, found nearest first within the user's sessions (or one of them)
// with their session (when asked) and excerpts, replaced when saved again, and gone
// with a purged session.
func testRecall(t *testing.T, e *Env) {
	ctx := context.Background()
	store, ok := e.DB.(recall.Store)
	if !ok {
		t.Fatal("the store does not implement recall.Store")
	}
	exchange := func(s *sessions.Session, q, a string, v ...float32) recall.Unit {
		t.Helper()
		qm := e.Say(t, s, history.RoleUser, q)
		am := e.Say(t, s, history.RoleAssistant, a)
		return recall.Unit{UserID: s.UserID, SessionID: s.ID, Model: "test/4", Vector: v,
			Question: recall.Excerpt{ID: qm.ID, Seq: qm.Seq, Content: q, CreatedAt: Epoch},
			Reply:    recall.Excerpt{ID: am.ID, Seq: am.Seq, Content: a, Clipped: true, CreatedAt: Epoch.Add(time.Second)}}
	}
	one := e.NewSession(t, "alice")
	two := e.NewSession(t, "alice")
	bobs := e.NewSession(t, "bob")
	trains := exchange(one, "trains to Oslo?", "the night train", 1, 0, 0, 0)
	hotels := exchange(one, "hotels?", "near the station", 0.8, 0.6, 0, 0)
	museums := exchange(two, "museums?", "the Munch museum", 0, 1, 0, 0)
	secret := exchange(bobs, "bob's", "secret", 1, 0, 0, 0)
	for _, x := range []recall.Unit{trains, hotels, museums, secret, hotels} { // hotels twice: replaced
		noErr(t, store.SaveUnit(ctx, x))
	}
	missing := trains
	missing.SessionID = "no-such-session"
	WantCode(t, store.SaveUnit(ctx, missing), errs.ENOTFOUND)
	stolen := secret
	stolen.UserID = "alice"
	WantCode(t, store.SaveUnit(ctx, stolen), errs.ENOTFOUND)

	near := func(user, session string, k int, v ...float32) recall.Query {
		return recall.Query{UserID: user, SessionID: session, Vector: v, K: k}
	}
	hits, err := store.Nearest(ctx, near("alice", "", 10, 1, 0, 0, 0))
	noErr(t, err)
	var order []string
	for _, h := range hits {
		order = append(order, h.Unit.Reply.ID)
	}
	want := []string{trains.Reply.ID, hotels.Reply.ID, museums.Reply.ID}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("nearest: %v, want %v", order, want)
	}
	if h := hits[1]; math.Abs(h.Distance-0.2) > 1e-4 ||
		!reflect.DeepEqual(h.Unit.Question, hotels.Question) || !h.Unit.Reply.CreatedAt.Equal(hotels.Reply.CreatedAt) ||
		h.Unit.Reply.Content != "near the station" || !h.Unit.Reply.Clipped || h.Unit.Reply.Seq != hotels.Reply.Seq ||
		h.Unit.Model != "test/4" || h.Unit.UserID != "alice" || h.Unit.SessionID != one.ID {
		t.Fatalf("a hit: %+v", h)
	}
	// The hits' sessions, read in one batch; one that is gone is left out.
	if got, err := store.SessionsOf(ctx, []string{one.ID, two.ID, "no-such-session"}); err != nil || len(got) != 2 || got[one.ID].ID != one.ID || got[two.ID].UserID != "alice" {
		t.Fatalf("sessions of hits: %+v, %v", got, err)
	}
	hits, err = store.Nearest(ctx, near("alice", two.ID, 10, 1, 0, 0, 0))
	noErr(t, err)
	if len(hits) != 1 || hits[0].Unit.Reply.ID != museums.Reply.ID {
		t.Fatalf("in one session: %+v", hits)
	}
	if hits, _ := store.Nearest(ctx, near("alice", "", 1, 1, 0, 0, 0)); len(hits) != 1 {
		t.Fatalf("k=1: %d hits", len(hits))
	}
	if hits, _ := store.Nearest(ctx, near("carol", "", 10, 1, 0, 0, 0)); len(hits) != 0 {
		t.Fatalf("carol found %+v", hits)
	}

	// A tool round's results, with no reply, named by the first.
	results := recall.Unit{UserID: "alice", SessionID: one.ID, Model: "test/4", Vector: []float32{0, 0, 1, 0},
		Tools: []recall.Excerpt{{ID: "t1", Seq: 7, Content: "Oslo: sun", CreatedAt: Epoch}, {ID: "t2", Seq: 8, Content: "Bergen: rain", Clipped: true, CreatedAt: Epoch}}}
	noErr(t, store.SaveUnit(ctx, results))
	hits, err = store.Nearest(ctx, near("alice", one.ID, 1, 0, 0, 1, 0))
	noErr(t, err)
	if len(hits) != 1 || hits[0].Unit.ID() != "t1" || len(hits[0].Unit.Tools) != 2 || !hits[0].Unit.Tools[0].CreatedAt.Equal(Epoch) ||
		hits[0].Unit.Tools[1].Content != "Bergen: rain" || !hits[0].Unit.Tools[1].Clipped || hits[0].Unit.Tools[1].Seq != 8 {
		t.Fatalf("a tool round's results: %+v", hits)
	}

	if n, err := store.CountUnits(ctx, "alice"); err != nil || n != 4 {
		t.Fatalf("alice's exchanges counted: %d, %v", n, err)
	}
	// A deleted session takes no new exchanges; a purged one keeps none.
	Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", two.ID))
	WantCode(t, store.SaveUnit(ctx, museums), errs.ENOTFOUND)
	Must[int](t)(PurgeAs(ctx, e.Sessions, "alice", two.ID))
	hits, err = store.Nearest(ctx, near("alice", "", 10, 0, 1, 0, 0))
	noErr(t, err)
	for _, h := range hits {
		if h.Unit.SessionID == two.ID {
			t.Fatalf("an exchange of a purged session: %+v", h)
		}
	}
	if n, err := store.CountUnits(ctx, "alice"); err != nil || n != 3 {
		t.Fatalf("alice's exchanges counted after the purge: %d, %v", n, err)
	}
}
