package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// testBranches: a session's tree is stored with it, a context is rebuilt
// for any branch, listings follow the active branch, and a turn can read
// the message it answers by id.
func testBranches(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	var msgs []history.Message
	for i, role := range []history.Role{history.RoleUser, history.RoleAssistant, history.RoleUser, history.RoleAssistant} {
		msgs = append(msgs, e.Say(t, s, role, fmt.Sprintf("message %d", i)))
	}
	s = e.Reload(t, s)
	if s.Branches != nil || msgs[3].ParentSeq != 2 || msgs[0].ParentSeq != -1 {
		t.Fatalf("a linear session: %+v, parents %d %d", s.Branches, msgs[0].ParentSeq, msgs[3].ParentSeq)
	}

	// Fork after message 1: UpdateTail writes the session's leaf and the
	// branch's tail together.
	base := Must[*history.Tail](t)(e.History.BranchTail(ctx, s, 1))
	if got := seqOf(base.Messages); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("branch tail to 1 = %v", got)
	}
	err := e.History.Store.UpdateTail(ctx, s.ID, func(cur *sessions.Session, t *history.Tail) error {
		*t = *e.History.ForkTail(cur, base, 1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, tail := Must2[*sessions.Session, *history.Tail](t)(e.History.Store.ReadTail(ctx, s.ID))
	if s.Leaf() != 1 || fmt.Sprint(seqOf(tail.Messages)) != "[0 1]" {
		t.Fatalf("after the fork: leaf %d, tail %v", s.Leaf(), seqOf(tail.Messages))
	}
	edit := e.Say(t, s, history.RoleUser, "message 2, edited")
	s = e.Reload(t, s)
	if edit.Seq != 4 || edit.ParentSeq != 1 || !reflect.DeepEqual(s.Branches.Forks, []sessions.Fork{{Seq: 4, Parent: 1}}) {
		t.Fatalf("the edit: %+v; forks %+v", edit, s.Branches)
	}
	if all := e.All(t, s); all[4].ParentSeq != 1 || all[3].ParentSeq != 2 {
		t.Fatalf("parents as stored: %d, %d", all[4].ParentSeq, all[3].ParentSeq)
	}

	// Listings: the active branch by default, in both orders and pages
	// that cross its spans; every message with All.
	var pages [][]int
	req := history.PageRequest{Limit: 2, Order: history.NewestFirst}
	for {
		p := Must[*history.Page](t)(e.History.Page(ctx, s, req))
		pages = append(pages, seqOf(p.Messages))
		if req.PageToken = p.NextPageToken; req.PageToken == "" {
			break
		}
	}
	if fmt.Sprint(pages) != "[[4 1] [0]]" {
		t.Errorf("active branch, newest first = %v", pages)
	}
	p := Must[*history.Page](t)(e.History.Page(ctx, s, history.PageRequest{}))
	if fmt.Sprint(seqOf(p.Messages)) != "[0 1 4]" || fmt.Sprint(p.Messages[2].Siblings) != "[2 4]" || p.Messages[1].Siblings != nil {
		t.Errorf("active branch = %v, siblings %v", seqOf(p.Messages), p.Messages[2].Siblings)
	}
	p = Must[*history.Page](t)(e.History.Page(ctx, s, history.PageRequest{All: true}))
	if fmt.Sprint(seqOf(p.Messages)) != "[0 1 2 3 4]" {
		t.Errorf("all = %v", seqOf(p.Messages))
	}
	_, err = e.History.Page(ctx, s, history.PageRequest{All: true, PageToken: "x"})
	WantCode(t, err, errs.EINVALID)
	within := Must[[]history.Message](t)(e.History.Store.ListMessages(ctx, history.ListQuery{SessionID: s.ID, Limit: 10, Within: &sessions.Span{From: 1, To: 3}}))
	if fmt.Sprint(seqOf(within)) != "[1 2 3]" {
		t.Errorf("within 1..3 = %v", seqOf(within))
	}

	// Switching back to message 2 shows its latest continuation, 3.
	s = Must[*sessions.Session](t)(e.History.SwitchBranch(ctx, "alice", s.ID, 2))
	_, tail = Must2[*sessions.Session, *history.Tail](t)(e.History.Store.ReadTail(ctx, s.ID))
	if s.Leaf() != 3 || fmt.Sprint(seqOf(tail.Messages)) != "[0 1 2 3]" {
		t.Fatalf("after switching: leaf %d, tail %v", s.Leaf(), seqOf(tail.Messages))
	}
	_, err = e.History.SwitchBranch(ctx, "mallory", s.ID, 2)
	WantCode(t, err, errs.ENOTFOUND)
	_, err = e.History.SwitchBranch(ctx, "alice", s.ID, 5)
	WantCode(t, err, errs.EINVALID)

	// A turn reads the message it answers by id.
	turns := e.DB.(chat.TurnStore)
	st := Must[*chat.TurnState](t)(turns.RunTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: s.ID, AskedID: msgs[2].ID, Day: "2026-01-15"}, nil,
		func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if st.Asked == nil || st.Asked.ID != msgs[2].ID || st.Asked.Content != "message 2" {
		t.Fatalf("asked by id: %+v", st.Asked)
	}
}

// Must2 fails tb on an error and returns the two values.
func Must2[A, B any](tb testing.TB) func(A, B, error) (A, B) {
	return func(a A, b B, err error) (A, B) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return a, b
	}
}
