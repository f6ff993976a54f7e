package history_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// branched is alice's session of six messages: 0 to 3 said in a line,
// then an edit of message 2 (4) answered by 5, so that 4 and 5 are the
// active branch and 2 and 3 are off it.
func branched(t *testing.T) (*storetest.Env, *sessions.Session) {
	t.Helper()
	ctx := context.Background()
	env := storetest.NewEnv(t, inprocdb.New())
	s := env.NewSession(t, "alice")
	for i, role := range []history.Role{history.RoleUser, history.RoleAssistant, history.RoleUser, history.RoleAssistant} {
		env.Say(t, s, role, fmt.Sprintf("message %d", i))
	}
	base := storetest.Must[*history.Tail](t)(env.History.BranchTail(ctx, env.Reload(t, s), 1))
	if err := env.History.Store.UpdateTail(ctx, s.ID, func(cur *sessions.Session, tail *history.Tail) error {
		*tail = *env.History.ForkTail(cur, base, 1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	env.Say(t, s, history.RoleUser, "message 2, edited")
	env.Say(t, s, history.RoleAssistant, "message 5")
	return env, env.Reload(t, s)
}

// seqs lists the seqs of msgs.
func seqs(msgs []history.Message) string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprint(m.Seq))
	}
	return strings.Join(out, " ")
}

// TestSwitchBranch: a switch makes active the latest version of the
// branch through the message named, rebuilds the context for it, and
// writes nothing when that branch is active already; it refuses a seq
// outside the session, another user's session and an archived one,
// naming why, and leaves the session as it was.
func TestSwitchBranch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		user     string
		seq      int
		archived bool
		leaf     int    // the active leaf after it
		tail     string // the context's messages after it
		code     errs.Code
		message  string // what a refusal says
	}{
		{name: "to the first version", user: "alice", seq: 2, leaf: 3, tail: "0 1 2 3"},
		{name: "through the first question: its latest branch", user: "alice", seq: 0, leaf: 5, tail: "0 1 4 5"},
		{name: "to the active branch: nothing written", user: "alice", seq: 4, leaf: 5, tail: "0 1 4 5"},
		{name: "a seq below 0", user: "alice", seq: -1, leaf: 5, tail: "0 1 4 5", code: errs.EINVALID, message: "seq"},
		{name: "a seq past the session", user: "alice", seq: 6, leaf: 5, tail: "0 1 4 5", code: errs.EINVALID, message: "seq"},
		{name: "another user's session", user: "bob", seq: 2, leaf: 5, tail: "0 1 4 5", code: errs.ENOTFOUND},
		{name: "an archived session", user: "alice", seq: 2, archived: true, leaf: 5, tail: "0 1 4 5", code: errs.EPRECONDITION, message: "archived"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env, s := branched(t)
			if tc.archived {
				s = storetest.Must[*sessions.Session](t)(env.Sessions.Archive(ctx, "alice", s.ID))
			}
			env.Clock.Advance(time.Minute)
			got, err := env.History.SwitchBranch(ctx, tc.user, s.ID, tc.seq)
			switch {
			case tc.code != "" && (errs.CodeOf(err) != tc.code || !strings.Contains(errs.Message(err), tc.message)):
				t.Fatalf("got %v, want %s naming %q", err, tc.code, tc.message)
			case tc.code == "" && (err != nil || got.Leaf() != tc.leaf):
				t.Fatalf("got %+v, %v; want leaf %d", got, err, tc.leaf)
			}
			after, tail, err := env.History.ReadTail(ctx, "alice", s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after.Leaf() != tc.leaf || seqs(tail.Messages) != tc.tail {
				t.Errorf("stored leaf %d, context %q; want %d, %q", after.Leaf(), seqs(tail.Messages), tc.leaf, tc.tail)
			}
			if wrote := !after.UpdatedAt.Equal(s.UpdatedAt); wrote != (tc.code == "" && tc.leaf != s.Leaf()) {
				t.Errorf("updatedAt %v → %v: a write where none was due, or none where one was", s.UpdatedAt, after.UpdatedAt)
			}
		})
	}
}

// TestPage: a session's messages are listed on its active branch by
// default and all of them with All, in either order, in pages whose
// tokens carry on where the last page ended and belong to their query
// alone; each version lists its siblings.
func TestPage(t *testing.T) {
	env, s := branched(t)
	other := env.NewSession(t, "alice")
	pageAll := func(t *testing.T, req history.PageRequest) (string, int) {
		var all []history.Message
		pages := 0
		for {
			p, err := env.History.Page(context.Background(), s, req)
			if err != nil {
				t.Fatal(err)
			}
			all, pages = append(all, p.Messages...), pages+1
			if p.NextPageToken == "" {
				return seqs(all), pages
			}
			req.PageToken = p.NextPageToken
		}
	}
	for _, tc := range []struct {
		name  string
		req   history.PageRequest
		want  string
		pages int
	}{
		{"the active branch", history.PageRequest{}, "0 1 4 5", 1},
		{"the active branch, newest first, in pages", history.PageRequest{Order: history.NewestFirst, Limit: 3}, "5 4 1 0", 2},
		{"the active branch in pages that cross the fork", history.PageRequest{Limit: 1}, "0 1 4 5", 4},
		{"every message", history.PageRequest{All: true, Limit: 4}, "0 1 2 3 4 5", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := pageAll(t, tc.req)
			if got != tc.want || pages != tc.pages {
				t.Errorf("listed %q in %d pages, want %q in %d", got, pages, tc.want, tc.pages)
			}
		})
	}
	t.Run("siblings", func(t *testing.T) {
		p, err := env.History.Page(context.Background(), s, history.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if edit := p.Messages[2]; edit.Seq != 4 || fmt.Sprint(edit.Siblings) != "[2 4]" {
			t.Errorf("the edit's siblings: %+v", edit)
		}
	})
	first, err := env.History.Page(context.Background(), s, history.PageRequest{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		session *sessions.Session
		req     history.PageRequest
		message string
	}{
		{"an unknown order", s, history.PageRequest{Order: "sideways"}, "order"},
		{"a limit too large", s, history.PageRequest{Limit: 1 << 20}, "limit"},
		{"a token that is not one", s, history.PageRequest{PageToken: "???"}, "pageToken"},
		{"a token of another order", s, history.PageRequest{Order: history.NewestFirst, PageToken: first.NextPageToken}, "pageToken"},
		{"a token of another session", other, history.PageRequest{PageToken: first.NextPageToken}, "pageToken"},
		{"a token of the active branch for all", s, history.PageRequest{All: true, PageToken: first.NextPageToken}, "pageToken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.History.Page(context.Background(), tc.session, tc.req)
			if errs.CodeOf(err) != errs.EINVALID || !strings.Contains(errs.Message(err), tc.message) {
				t.Errorf("got %v, want invalid naming %s", err, tc.message)
			}
		})
	}
}
