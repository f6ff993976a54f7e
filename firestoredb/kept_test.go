package firestoredb_test

import (
	"context"
	"slices"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/storetest"
)

// TestKeptContextIsNotTrusted: an instance that kept a session's context
// from a read starts an append given that version from it; when another
// instance wrote meanwhile, the commit planned from it is refused, and the
// append reads the current version and plans again (here: refuses, as the
// domain does for a stale ifMatch), leaving the other's write alone.
func TestKeptContextIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	one, client := open(t)
	other := firestoredb.New(client)
	e := storetest.NewEnv(t, one)
	s := e.NewSession(t, "alice")
	e.Say(t, s, history.RoleUser, "first")
	day := "2026-01-15"
	read, err := one.RunTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: s.ID, Day: day}, nil,
		func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	v0 := read.ContextVersion
	appendOne := func(db *firestoredb.DB, q chat.AppendQuery, text string, seen *[]string) (string, error) {
		plan, err := e.History.PlanFor(q.UserID, q.SessionID, q.Key, history.Draft{Role: history.RoleUser, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return db.RunAppend(ctx, q, func(st *chat.AppendState) (*chat.AppendWrite, error) {
			*seen = append(*seen, st.Version)
			if q.IfMatch != "" && st.Version != q.IfMatch {
				return nil, errs.Errorf(errs.ECHANGED, "changed")
			}
			ss, tl := st.Session.Clone(), st.Tail.Clone()
			msgs, err := plan(ss, tl, st.Stored)
			if err != nil {
				return nil, err
			}
			return &chat.AppendWrite{Session: ss, Tail: tl, Messages: msgs, Window: st.Usage}, nil
		})
	}
	var seenOther, seenOne []string
	v1, err := appendOne(other, chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: day}, "by the other instance", &seenOther)
	if err != nil || v1 == v0 {
		t.Fatalf("the other instance's append: %q, %v", v1, err)
	}
	_, err = appendOne(one, chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: day, IfMatch: v0}, "stale", &seenOne)
	storetest.WantCode(t, err, errs.ECHANGED)
	if !slices.Equal(seenOne, []string{v0, v1}) {
		t.Errorf("the append planned at %q, want the kept %q and then the current %q", seenOne, v0, v1)
	}
	all := e.All(t, e.Reload(t, s))
	if len(all) != 2 || all[1].Content != "by the other instance" {
		t.Errorf("stored %+v", all)
	}
}
