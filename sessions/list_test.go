package sessions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestList: a user's sessions are listed by status (active unless asked),
// most recently updated first, in pages whose tokens carry on where the
// last page ended, whatever is updated meanwhile, and belong to their
// status alone; never another user's. A bad status, limit or token is
// refused, naming it.
func TestList(t *testing.T) {
	ctx := context.Background()
	env := storetest.NewEnv(t, inprocdb.New())
	titles := map[string]string{} // id → title
	create := func(user, title string) *sessions.Session {
		env.Clock.Advance(time.Minute)
		s := storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, user, sessions.CreateInput{Title: title}))
		titles[s.ID] = title
		return s
	}
	for _, title := range []string{"a", "b", "c", "d", "e"} {
		create("alice", title)
	}
	archived := create("alice", "archived")
	deleted := create("alice", "deleted")
	create("bob", "bob's")
	env.Clock.Advance(time.Minute)
	storetest.Must[*sessions.Session](t)(env.Sessions.Archive(ctx, "alice", archived.ID))
	storetest.Must[*sessions.Session](t)(env.Sessions.Delete(ctx, "alice", deleted.ID))

	listAll := func(t *testing.T, req sessions.ListRequest, between func()) (string, int) {
		var got []string
		pages := 0
		for {
			p, err := env.Sessions.List(ctx, "alice", req)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, s := range p.Sessions {
				got = append(got, titles[s.ID])
			}
			if p.NextPageToken == "" {
				return strings.Join(got, " "), pages
			}
			if between != nil {
				between()
			}
			req.PageToken = p.NextPageToken
		}
	}
	for _, tc := range []struct {
		name  string
		req   sessions.ListRequest
		want  string
		pages int
	}{
		{"active, newest first", sessions.ListRequest{}, "e d c b a", 1},
		{"in pages", sessions.ListRequest{Limit: 2}, "e d c b a", 3},
		{"archived", sessions.ListRequest{Status: sessions.StatusArchived}, "archived", 1},
		{"deleted", sessions.ListRequest{Status: sessions.StatusDeleted, Limit: 1}, "deleted", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, pages := listAll(t, tc.req, nil); got != tc.want || pages != tc.pages {
				t.Errorf("listed %q in %d pages, want %q in %d", got, pages, tc.want, tc.pages)
			}
		})
	}
	t.Run("a session updated between pages is listed once at most", func(t *testing.T) {
		renamed := false
		got, _ := listAll(t, sessions.ListRequest{Limit: 2}, func() {
			if !renamed { // "c", not listed yet, moves to the front
				renamed = true
				env.Clock.Advance(time.Minute)
				for id, title := range titles {
					if title == "c" {
						storetest.Must[*sessions.Session](t)(env.Sessions.Update(ctx, "alice", id, sessions.Update{Metadata: &sessions.Metadata{Topic: "moved"}}))
					}
				}
			}
		})
		seen := map[string]bool{}
		for _, title := range strings.Fields(got) {
			if seen[title] {
				t.Errorf("listed %q: %s twice", got, title)
			}
			seen[title] = true
		}
		if !seen["e"] || !seen["d"] || !seen["b"] || !seen["a"] {
			t.Errorf("listed %q: one left unchanged is missing", got)
		}
	})

	first := storetest.Must[*sessions.SessionPage](t)(env.Sessions.List(ctx, "alice", sessions.ListRequest{Limit: 1}))
	for _, tc := range []struct {
		name    string
		user    string
		req     sessions.ListRequest
		message string
	}{
		{"an unknown status", "alice", sessions.ListRequest{Status: "lost"}, "status"},
		{"a limit below 1", "alice", sessions.ListRequest{Limit: -1}, "limit"},
		{"a limit too large", "alice", sessions.ListRequest{Limit: 1 << 20}, "limit"},
		{"a token that is not one", "alice", sessions.ListRequest{PageToken: "???"}, "pageToken"},
		{"a token of another status", "alice", sessions.ListRequest{Status: sessions.StatusArchived, PageToken: first.NextPageToken}, "pageToken"},
		{"no user", "", sessions.ListRequest{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Sessions.List(ctx, tc.user, tc.req)
			if code := errs.CodeOf(err); (code != errs.EINVALID && code != errs.EUNAUTHENTICATED) || !strings.Contains(errs.Message(err), tc.message) {
				t.Errorf("got %v, want a refusal naming %q", err, tc.message)
			}
		})
	}
}
