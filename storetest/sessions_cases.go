package storetest

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/sessions"
)

func testCreateGet(t *testing.T, e *Env) {
	ctx := context.Background()
	in := sessions.CreateInput{
		Title:         "  Trip planning  ",
		RetentionDays: 7,
		Metadata: sessions.Metadata{AgentType: "planner", Topic: "travel", Tags: []string{"a", "b"},
			Custom: map[string]string{"app.version": "1.2"}},
	}
	s := Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", in))
	if s.Title != "Trip planning" || s.TitleSource != sessions.TitleUser {
		t.Errorf("title = %q (%s), want trimmed user title", s.Title, s.TitleSource)
	}
	if s.Status != sessions.StatusActive || s.UserID != "alice" || s.Model != "gpt-4o-mini" {
		t.Errorf("session = %+v", s)
	}
	if got, want := s.ExpiresAt, Epoch.Add(7*sessions.Day); !got.Equal(want) {
		t.Errorf("expiresAt = %v, want %v (own retention of 7 days)", got, want)
	}
	got := Must[*sessions.Session](t)(e.Sessions.Get(ctx, "alice", s.ID))
	if !reflect.DeepEqual(got, s) {
		t.Errorf("get = %+v\nwant %+v", got, s)
	}

	d := e.NewSession(t, "alice")
	if d.Title != sessions.DefaultTitle || d.TitleSource != sessions.TitleDefault {
		t.Errorf("default title = %q (%s)", d.Title, d.TitleSource)
	}
	if got, want := d.ExpiresAt, Epoch.Add(30*sessions.Day); !got.Equal(want) {
		t.Errorf("expiresAt = %v, want %v", got, want)
	}

	_, err := e.Sessions.Get(ctx, "bob", s.ID)
	WantCode(t, err, errs.ENOTFOUND)
	_, errMissing := e.Sessions.Get(ctx, "alice", "doesNotExist")
	WantCode(t, errMissing, errs.ENOTFOUND)
	if errs.Message(err) != errs.Message(sessions.NotFound(s.ID)) {
		t.Errorf("another user's session must look missing: %q", errs.Message(err))
	}
	for _, id := range []string{"", "a/b", "..", "__x__", strings.Repeat("a", 129), "sp ace"} {
		_, err := e.Sessions.Get(ctx, "alice", id)
		WantCode(t, err, errs.EINVALID)
	}
	_, err = e.Sessions.Get(ctx, "", s.ID)
	WantCode(t, err, errs.EUNAUTHENTICATED)
}

func testCreateInvalid(t *testing.T, e *Env) {
	ctx := context.Background()
	many := make([]string, 21)
	for i := range many {
		many[i] = "t"
	}
	cases := map[string]sessions.CreateInput{
		"RetentionNegative": {RetentionDays: -1},
		"RetentionTooLong":  {RetentionDays: sessions.MaxRetentionDays + 1},
		"TitleTooLong":      {Title: strings.Repeat("x", sessions.MaxTitleLen+1)},
		"TooManyTags":       {Metadata: sessions.Metadata{Tags: many}},
		"EmptyTag":          {Metadata: sessions.Metadata{Tags: []string{""}}},
		"BadCustomKey":      {Metadata: sessions.Metadata{Custom: map[string]string{"bad key": "v"}}},
		"LongCustomValue":   {Metadata: sessions.Metadata{Custom: map[string]string{"k": strings.Repeat("v", 513)}}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.Sessions.Create(ctx, "alice", in)
			WantCode(t, err, errs.EINVALID)
		})
	}
	p := Must[*sessions.SessionPage](t)(e.Sessions.List(ctx, "alice", sessions.ListRequest{}))
	if len(p.Sessions) != 0 {
		t.Errorf("invalid creates stored %d sessions", len(p.Sessions))
	}
}

func testUpdate(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	e.Clock.Advance(time.Minute)
	title := "Renamed"
	md := sessions.Metadata{Topic: "new", Custom: map[string]string{"k": "v"}}
	u := Must[*sessions.Session](t)(e.Sessions.Update(ctx, "alice", s.ID, sessions.Update{Title: &title, Metadata: &md}))
	if u.Title != "Renamed" || u.TitleSource != sessions.TitleUser || !reflect.DeepEqual(u.Metadata, md) {
		t.Errorf("updated = %+v", u)
	}
	if !u.UpdatedAt.Equal(Epoch.Add(time.Minute)) || !u.LastActivityAt.Equal(Epoch) {
		t.Errorf("updatedAt = %v, lastActivityAt = %v: an update is not activity", u.UpdatedAt, u.LastActivityAt)
	}
	if got := e.Reload(t, s); !reflect.DeepEqual(got, u) {
		t.Errorf("stored = %+v\nwant %+v", got, u)
	}

	other := "Mallory's"
	_, err := e.Sessions.Update(ctx, "mallory", s.ID, sessions.Update{Title: &other})
	WantCode(t, err, errs.ENOTFOUND)
	if got := e.Reload(t, s); got.Title != "Renamed" {
		t.Errorf("another user's update changed the title to %q", got.Title)
	}
	empty := " "
	_, err = e.Sessions.Update(ctx, "alice", s.ID, sessions.Update{Title: &empty})
	WantCode(t, err, errs.EINVALID)
	_, err = e.Sessions.Update(ctx, "alice", s.ID, sessions.Update{})
	WantCode(t, err, errs.EINVALID)
	bad := sessions.Metadata{Tags: []string{strings.Repeat("t", 65)}}
	_, err = e.Sessions.Update(ctx, "alice", s.ID, sessions.Update{Metadata: &bad})
	WantCode(t, err, errs.EINVALID)
	_, err = e.Sessions.Update(ctx, "alice", "missing", sessions.Update{Title: &title})
	WantCode(t, err, errs.ENOTFOUND)
}

// testLifecycle tries every action from every status.
func testLifecycle(t *testing.T, e *Env) {
	ctx := context.Background()
	p := sessions.DefaultPolicy()
	reach := map[sessions.Status][]sessions.Action{
		sessions.StatusActive:   nil,
		sessions.StatusArchived: {sessions.ActionArchive},
		sessions.StatusDeleted:  {sessions.ActionDelete},
	}
	type result struct {
		to      sessions.Status // "" when refused
		expires time.Duration   // from the moment of the action
	}
	want := map[sessions.Status]map[sessions.Action]result{
		sessions.StatusActive: {
			sessions.ActionArchive: {sessions.StatusArchived, p.Archived},
			sessions.ActionRestore: {},
			sessions.ActionDelete:  {sessions.StatusDeleted, p.Deleted},
			sessions.ActionPurge:   {},
		},
		sessions.StatusArchived: {
			sessions.ActionArchive: {},
			sessions.ActionRestore: {sessions.StatusActive, p.ActiveIdle},
			sessions.ActionDelete:  {sessions.StatusDeleted, p.Deleted},
			sessions.ActionPurge:   {},
		},
		sessions.StatusDeleted: {
			sessions.ActionArchive: {},
			sessions.ActionRestore: {sessions.StatusActive, p.ActiveIdle},
			sessions.ActionDelete:  {},
			sessions.ActionPurge:   {sessions.StatusPurged, 0},
		},
	}
	do := func(user, id string, a sessions.Action) (*sessions.Session, error) {
		switch a {
		case sessions.ActionArchive:
			return e.Sessions.Archive(ctx, user, id)
		case sessions.ActionRestore:
			return e.Sessions.Restore(ctx, user, id)
		case sessions.ActionDelete:
			return e.Sessions.Delete(ctx, user, id)
		default:
			_, err := PurgeAs(ctx, e.Sessions, user, id)
			return nil, err
		}
	}
	for from, actions := range want {
		for action, w := range actions {
			t.Run(string(from)+"/"+string(action), func(t *testing.T) {
				s := e.NewSession(t, "alice")
				for _, a := range reach[from] {
					Must[*sessions.Session](t)(do("alice", s.ID, a))
				}
				before := e.Reload(t, s)
				// Another user can do nothing to it, whatever the action.
				_, err := do("mallory", s.ID, action)
				WantCode(t, err, errs.ENOTFOUND)

				got, err := do("alice", s.ID, action)
				after, getErr := e.Sessions.Get(ctx, "alice", s.ID)
				switch {
				case w.to == "":
					WantCode(t, err, errs.EPRECONDITION)
					if !reflect.DeepEqual(after, before) {
						t.Errorf("refused %s changed the session:\n%+v\n%+v", action, before, after)
					}
				case w.to == sessions.StatusPurged:
					if err != nil {
						t.Fatal(err)
					}
					WantCode(t, getErr, errs.ENOTFOUND)
				default:
					if err != nil {
						t.Fatal(err)
					}
					if got.Status != w.to || !reflect.DeepEqual(after, got) {
						t.Errorf("status = %s, want %s; stored %+v", got.Status, w.to, after)
					}
					now := e.Clock.Now()
					if want := now.Add(w.expires); !got.ExpiresAt.Equal(want) {
						t.Errorf("expiresAt = %v, want %v", got.ExpiresAt, want)
					}
					if w.to == sessions.StatusActive && (got.ArchivedAt != nil || got.DeletedAt != nil || !got.LastActivityAt.Equal(now)) {
						t.Errorf("restore must clear archivedAt/deletedAt and count as activity: %+v", got)
					}
				}
			})
		}
	}
	var te *sessions.TransitionError
	_, err := sessions.Next(sessions.StatusActive, sessions.ActionRestore)
	if !asTransition(err, &te) || te.From != sessions.StatusActive {
		t.Errorf("refused transition is not a *TransitionError: %v", err)
	}
}

func testListPagination(t *testing.T, e *Env) {
	ctx := context.Background()
	var active []string
	for i := 0; i < 7; i++ {
		e.Clock.Advance(time.Second)
		s := e.NewSession(t, "alice")
		if i == 2 || i == 5 {
			Must[*sessions.Session](t)(e.Sessions.Archive(ctx, "alice", s.ID))
			continue
		}
		active = append([]string{s.ID}, active...) // newest first
	}
	e.NewSession(t, "bob")

	var got []string
	req := sessions.ListRequest{Limit: 2}
	pages := 0
	for {
		p := Must[*sessions.SessionPage](t)(e.Sessions.List(ctx, "alice", req))
		pages++
		for _, s := range p.Sessions {
			got = append(got, s.ID)
			if s.UserID != "alice" || s.Status != sessions.StatusActive {
				t.Errorf("listed %+v", s)
			}
		}
		if p.NextPageToken == "" {
			break
		}
		req.PageToken = p.NextPageToken
	}
	if pages != 3 || !reflect.DeepEqual(got, active) {
		t.Errorf("%d pages: %v\nwant 3 pages: %v", pages, got, active)
	}
	arch := Must[*sessions.SessionPage](t)(e.Sessions.List(ctx, "alice", sessions.ListRequest{Status: sessions.StatusArchived}))
	if len(arch.Sessions) != 2 || arch.NextPageToken != "" {
		t.Errorf("archived: %d sessions, token %q", len(arch.Sessions), arch.NextPageToken)
	}
	bob := Must[*sessions.SessionPage](t)(e.Sessions.List(ctx, "bob", sessions.ListRequest{}))
	if len(bob.Sessions) != 1 {
		t.Errorf("bob sees %d sessions", len(bob.Sessions))
	}

	first := Must[*sessions.SessionPage](t)(e.Sessions.List(ctx, "alice", sessions.ListRequest{Limit: 2}))
	_, err := e.Sessions.List(ctx, "alice", sessions.ListRequest{Status: sessions.StatusArchived, PageToken: first.NextPageToken})
	WantCode(t, err, errs.EINVALID)
	_, err = e.Sessions.List(ctx, "alice", sessions.ListRequest{PageToken: "not-a-token"})
	WantCode(t, err, errs.EINVALID)
	_, err = e.Sessions.List(ctx, "alice", sessions.ListRequest{Limit: paging.MaxSize + 1})
	WantCode(t, err, errs.EINVALID)
	_, err = e.Sessions.List(ctx, "alice", sessions.ListRequest{Status: "purged"})
	WantCode(t, err, errs.EINVALID)
}

// testListTies pages through sessions that share one updatedAt: the id
// breaks the tie, so none is lost or repeated.
func testListTies(t *testing.T, e *Env) {
	ctx := context.Background()
	want := map[string]bool{}
	for i := 0; i < 5; i++ {
		want[e.NewSession(t, "alice").ID] = true
	}
	seen := map[string]bool{}
	req := sessions.ListRequest{Limit: 2}
	for {
		p := Must[*sessions.SessionPage](t)(e.Sessions.List(ctx, "alice", req))
		for _, s := range p.Sessions {
			if seen[s.ID] {
				t.Errorf("%s listed twice", s.ID)
			}
			seen[s.ID] = true
		}
		if p.NextPageToken == "" {
			break
		}
		req.PageToken = p.NextPageToken
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("listed %v, want %v", seen, want)
	}
}
