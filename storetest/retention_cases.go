package storetest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// testRetentionStore: retention.Store. Expired sessions are listed by
// ExpiresAt in pages and counted, per status; a batch purge removes the
// sessions its check accepts, with everything under them, calls forget once
// for each user of those, with all of theirs, and leaves the others; the backlog is kept from run to run.
func testRetentionStore(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	var active []*sessions.Session
	for range 4 {
		active = append(active, e.NewSession(t, "alice"))
		e.Clock.Advance(time.Hour)
	}
	archived := e.NewSession(t, "bob")
	archived = Must[*sessions.Session](t)(e.Sessions.Archive(ctx, "bob", archived.ID))

	at := active[2].ExpiresAt
	if got := Must[[]*sessions.Session](t)(db.ExpiredSessions(ctx, sessions.StatusActive, at, nil, 10)); !slices.Equal(idsOf(got), idsOf(active[:3])) {
		t.Fatalf("expired at the third's ExpiresAt: %v, want %v", idsOf(got), idsOf(active[:3]))
	}
	if n := Must[int](t)(db.CountExpired(ctx, sessions.StatusActive, at)); n != 3 {
		t.Errorf("CountExpired = %d, want 3", n)
	}
	if n := Must[int](t)(db.CountExpired(ctx, sessions.StatusActive, at.Add(-time.Microsecond))); n != 2 {
		t.Errorf("CountExpired a microsecond before = %d, want 2", n)
	}
	page := Must[[]*sessions.Session](t)(db.ExpiredSessions(ctx, sessions.StatusActive, at, nil, 2))
	last := page[len(page)-1]
	rest := Must[[]*sessions.Session](t)(db.ExpiredSessions(ctx, sessions.StatusActive, at, &retention.Cursor{ExpiresAt: last.ExpiresAt, ID: last.ID}, 2))
	if got := append(idsOf(page), idsOf(rest)...); !slices.Equal(got, idsOf(active[:3])) {
		t.Errorf("two pages: %v, want %v", got, idsOf(active[:3]))
	}
	if got := Must[[]*sessions.Session](t)(db.ExpiredSessions(ctx, sessions.StatusArchived, archived.ExpiresAt, nil, 10)); !slices.Equal(idsOf(got), []string{archived.ID}) {
		t.Errorf("expired archived sessions: %v, want bob's", idsOf(got))
	}
	if n := Must[int](t)(db.CountExpired(ctx, sessions.StatusDeleted, at.Add(1000*sessions.Day))); n != 0 {
		t.Errorf("%d expired deleted sessions, want 0", n)
	}

	e.Say(t, active[0], history.RoleUser, "hello")
	e.Say(t, active[0], history.RoleAssistant, "hi")
	var mu sync.Mutex
	var forgotten []string
	forget := func(_ context.Context, userID string, sessionIDs []string) error {
		mu.Lock()
		defer mu.Unlock()
		forgotten = append(forgotten, userID+"/"+strings.Join(sessionIDs, ","))
		return nil
	}
	check := func(s *sessions.Session) error {
		if s.ID == active[1].ID {
			return errs.Errorf(errs.EPRECONDITION, "the check refuses this one")
		}
		return nil
	}
	res := db.PurgeSessions(ctx, []string{active[0].ID, active[1].ID, archived.ID, active[3].ID}, check, forget)
	if len(res) != 4 {
		t.Fatalf("%d outcomes for 4 sessions", len(res))
	}
	for _, r := range res {
		switch r.SessionID {
		case archived.ID, active[3].ID:
			if r.Err != nil || r.Documents < 1 {
				t.Errorf("an accepted purge: %d documents, %v", r.Documents, r.Err)
			}
		case active[0].ID:
			if r.Err != nil || r.Documents < 3 { // the session and its two messages, at least
				t.Errorf("the accepted purge: %d documents, %v", r.Documents, r.Err)
			}
		case active[1].ID:
			if errs.CodeOf(r.Err) != errs.EPRECONDITION || r.Documents != 0 {
				t.Errorf("the refused purge: %d documents, %v", r.Documents, r.Err)
			}
		default:
			t.Errorf("an outcome for %q", r.SessionID)
		}
	}
	_, err := db.GetSession(ctx, active[0].ID)
	WantCode(t, err, errs.ENOTFOUND)
	if msgs := Must[[]history.Message](t)(db.ListMessages(ctx, history.ListQuery{SessionID: active[0].ID, Limit: 10})); len(msgs) != 0 {
		t.Errorf("%d messages left under a purged session", len(msgs))
	}
	Must[*sessions.Session](t)(db.GetSession(ctx, active[1].ID))
	slices.Sort(forgotten)
	if want := []string{"alice/" + active[0].ID + "," + active[3].ID, "bob/" + archived.ID}; !slices.Equal(forgotten, want) {
		t.Errorf("forget was called for %v, want once a user: %v", forgotten, want)
	}

	if ids := Must[[]string](t)(db.PendingPurges(ctx, "", 10)); len(ids) != 0 {
		t.Errorf("pending purges after complete ones: %v", ids)
	}
	if n := Must[int](t)(db.CountPendingPurges(ctx)); n != 0 {
		t.Errorf("%d pending purges", n)
	}
	if res := db.ResumePurges(ctx, nil, forget); len(res) != 0 {
		t.Errorf("resuming nothing: %+v", res)
	}

	if _, _, ok, err := db.LastBacklog(ctx); ok || err != nil {
		t.Fatalf("a backlog before any run: %v %v", ok, err)
	}
	if err := db.SaveBacklog(ctx, 7, Epoch); err != nil {
		t.Fatal(err)
	}
	if n, when, ok, err := db.LastBacklog(ctx); !ok || err != nil || n != 7 || !when.Equal(Epoch) {
		t.Errorf("the saved backlog read back as %d at %v (%v, %v)", n, when, ok, err)
	}
}

func idsOf(ss []*sessions.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// testPrivacyStore: retention.PrivacyStore's erasure. Deleting a user's
// documents removes every session with what is under it, their usage and
// long-term memory, counts them, and touches no other user's.
func testPrivacyStore(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	a1, a2, b := e.NewSession(t, "alice"), e.NewSession(t, "alice"), e.NewSession(t, "bob")
	e.Say(t, a1, history.RoleUser, "mine")
	e.Say(t, a1, history.RoleAssistant, "yours")
	e.Say(t, b, history.RoleUser, "bob's")
	Must[*sessions.Session](t)(e.Sessions.Archive(ctx, "alice", a2.ID))
	if err := db.AddTokens(ctx, "alice", chat.Day(Epoch), 10); err != nil {
		t.Fatal(err)
	}
	u := Must[*longterm.User](t)(db.GetUser(ctx, "alice"))
	u.Profile.Personal.Text = "Lives in Lisbon."
	if err := db.SaveMemory(ctx, "alice", 0, u, longterm.Change{}); err != nil {
		t.Fatal(err)
	}
	// Two sessions, two messages, a usage day and the memory document at
	// least; stores also count the context documents they keep.
	if n := Must[int](t)(db.DeleteUserDocuments(ctx, "alice")); n < 6 {
		t.Errorf("erasing alice counted %d documents, want at least 6", n)
	}
	for _, st := range []sessions.Status{sessions.StatusActive, sessions.StatusArchived, sessions.StatusDeleted} {
		if left := Must[[]*sessions.Session](t)(db.ListSessions(ctx, sessions.ListQuery{UserID: "alice", Status: st, Limit: 10})); len(left) != 0 {
			t.Errorf("%d %s sessions of alice left", len(left), st)
		}
	}
	if msgs := Must[[]history.Message](t)(db.ListMessages(ctx, history.ListQuery{SessionID: a1.ID, Limit: 10})); len(msgs) != 0 {
		t.Errorf("%d of alice's messages left", len(msgs))
	}
	if r := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "alice")); r != nil {
		t.Errorf("alice's usage left: %+v", r)
	}
	if got := Must[*longterm.User](t)(db.GetUser(ctx, "alice")); got.Version != 0 || got.Profile.Personal.Text != "" {
		t.Errorf("alice's memory left: %+v", got)
	}
	if n := Must[int](t)(db.DeleteUserDocuments(ctx, "alice")); n != 0 {
		t.Errorf("erasing again counted %d", n)
	}
	Must[*sessions.Session](t)(db.GetSession(ctx, b.ID))
	if msgs := Must[[]history.Message](t)(db.ListMessages(ctx, history.ListQuery{SessionID: b.ID, Limit: 10})); len(msgs) != 1 {
		t.Errorf("bob has %d messages after alice's erasure, want 1", len(msgs))
	}
}
