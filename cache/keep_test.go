package cache_test

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// claims is an in-process store that names a version for every state it
// returns, as a networked store does, and records each claim the cache
// asks it to plan from a known state (it claims none: the turn then runs
// from a read).
type claims struct {
	*inprocdb.DB
	known    []*chat.TurnState
	failRead bool // RunTurn fails before it plans
}

func (c *claims) RunTurn(ctx context.Context, q chat.TurnQuery, prev *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, error) {
	if c.failRead {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "the store is down")
	}
	out, err := c.DB.RunTurn(ctx, q, prev, plan)
	return versioned(out), err
}

func (c *claims) ReadKnown(ctx context.Context, q chat.TurnQuery, known *chat.TurnState) (*chat.TurnState, error) {
	out, err := c.DB.ReadKnown(ctx, q, known)
	return versioned(out), err
}

// versioned is st with versions named, as a networked store names them.
func versioned(st *chat.TurnState) *chat.TurnState {
	if st != nil {
		st.Version = st.ContextVersion
		st.SlotVersions = make([]chat.Version, len(st.Slots))
		for i, m := range st.Slots {
			st.SlotVersions[i] = m
		}
	}
	return st
}

func (c *claims) ClaimKnown(_ context.Context, _ chat.TurnQuery, known *chat.TurnState, _ func(*chat.TurnState) (*chat.TurnWrite, error)) (*chat.TurnState, bool) {
	c.known = append(c.known, known)
	return nil, false
}

// TestWritesDropWhatWasKept: a turn of a session the cache kept, by a user
// whose slots and spend it knows, is claimed from what was kept; after any
// other write of the session through the cache it is not (the write tells
// no version to keep), but for a change of an active session alone (a
// rename), after which the cache reads the session again and the claim
// plans from it renamed; a charge of the user's day raises the least
// spend the claim plans with. What the cache holds stays within its bytes.
func TestWritesDropWhatWasKept(t *testing.T) {
	ctx := context.Background()
	const day = "2026-01-15"
	for _, tc := range []struct {
		name      string
		bytes     int
		between   func(t *testing.T, e *storetest.Env, c *cache.Store, s, other *sessions.Session)
		wantClaim bool
		wantFloor int    // the least spend the claim planned with
		wantTitle string // the session's title the claim planned with ("": as created)
	}{
		{name: "nothing between", bytes: cache.DefaultBytes, wantClaim: true},
		{name: "a message appended", bytes: cache.DefaultBytes, wantClaim: false,
			between: func(t *testing.T, e *storetest.Env, _ *cache.Store, s, _ *sessions.Session) {
				e.Say(t, s, history.RoleUser, "appended")
			}},
		{name: "a rename", bytes: cache.DefaultBytes, wantClaim: true, wantTitle: "renamed",
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, _ *sessions.Session) {
				if _, err := c.UpdateSession(ctx, s.ID, func(s *sessions.Session) error { s.Title = "renamed"; return nil }); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "archived", bytes: cache.DefaultBytes, wantClaim: false,
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, _ *sessions.Session) {
				if _, err := c.UpdateSession(ctx, s.ID, func(s *sessions.Session) error { s.Status = sessions.StatusArchived; return nil }); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a refused rename", bytes: cache.DefaultBytes, wantClaim: false,
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, _ *sessions.Session) {
				if _, err := c.UpdateSession(ctx, s.ID, func(s *sessions.Session) error { return errs.Errorf(errs.EINVALID, "no") }); err == nil {
					t.Fatal("a refused update did not fail")
				}
			}},
		{name: "the tail rewritten", bytes: cache.DefaultBytes, wantClaim: false,
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, _ *sessions.Session) {
				if err := c.UpdateTail(ctx, s.ID, func(*sessions.Session, *history.Tail) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "archived with others", bytes: cache.DefaultBytes, wantClaim: false,
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, other *sessions.Session) {
				if _, err := c.UpdateSessions(ctx, s.UserID, []string{other.ID, s.ID}, func(*sessions.Session) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "tokens charged", bytes: cache.DefaultBytes, wantClaim: true, wantFloor: 7,
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, _ *sessions.Session) {
				if err := c.AddTokens(ctx, s.UserID, day, 7); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "pushed out by a newer session", bytes: 1500, wantClaim: false,
			between: func(t *testing.T, e *storetest.Env, c *cache.Store, s, other *sessions.Session) {
				q := chat.TurnQuery{UserID: s.UserID, SessionID: other.ID}
				if _, err := c.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &claims{DB: inprocdb.New()}
			c := cache.New(src, tc.bytes)
			e := storetest.NewEnv(t, c)
			s, other := e.NewSession(t, "alice"), e.NewSession(t, "alice")
			q := chat.TurnQuery{UserID: "alice", SessionID: s.ID, Day: day, Slots: []int{0, 1}}
			read := func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }
			if _, err := c.RunTurn(ctx, q, nil, read); err != nil { // the user's slots and spend, known from here on
				t.Fatal(err)
			}
			if tc.between != nil {
				tc.between(t, e, c, s, other)
			}
			if _, err := c.RunTurn(ctx, q, nil, read); err != nil {
				t.Fatal(err)
			}
			if got := len(src.known) == 1; got != tc.wantClaim {
				t.Fatalf("claimed from what was kept: %v, want %v", got, tc.wantClaim)
			}
			if tc.wantClaim {
				if tc.wantTitle == "" {
					tc.wantTitle = s.Title
				}
				if k := src.known[0]; k.Session.ID != s.ID || k.Session.Title != tc.wantTitle || k.DayTokens != tc.wantFloor || len(k.Slots) != 2 {
					t.Errorf("the claim planned from session %s (%q), spend at least %d, %d slots; want %s (%q), %d, 2",
						k.Session.ID, k.Session.Title, k.DayTokens, len(k.Slots), s.ID, tc.wantTitle, tc.wantFloor)
				}
			}
		})
	}
}

// TestRefusedTurnKeepsWhatItRead: a turn its plan refuses (a limit, a
// busy session) commits nothing, but what the store read for it is kept,
// so the next turn of the session here claims from it; a turn the store
// itself failed keeps nothing.
func TestRefusedTurnKeepsWhatItRead(t *testing.T) {
	ctx := context.Background()
	const day = "2026-01-15"
	for _, tc := range []struct {
		name      string
		failRead  bool
		wantClaim bool
	}{
		{name: "refused by its plan", wantClaim: true},
		{name: "failed in the store", failRead: true, wantClaim: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &claims{DB: inprocdb.New()}
			c := cache.New(src, cache.DefaultBytes)
			e := storetest.NewEnv(t, c)
			s := e.NewSession(t, "alice")
			e.Say(t, s, history.RoleUser, "hello") // through the cache: nothing kept of s
			q := chat.TurnQuery{UserID: "alice", SessionID: s.ID, Day: day, Slots: []int{0, 1}}
			refuse := func(*chat.TurnState) (*chat.TurnWrite, error) {
				return nil, errs.Errorf(errs.ERATELIMITED, "a limit")
			}
			src.failRead = tc.failRead
			if _, err := c.RunTurn(ctx, q, nil, refuse); errs.CodeOf(err) == "" {
				t.Fatal("the refused turn did not fail")
			}
			src.failRead = false
			read := func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }
			if _, err := c.RunTurn(ctx, q, nil, read); err != nil {
				t.Fatal(err)
			}
			if got := len(src.known) == 1; got != tc.wantClaim {
				t.Fatalf("the next turn claimed from what was kept: %v, want %v", got, tc.wantClaim)
			}
			if tc.wantClaim && (src.known[0].Session.ID != s.ID || src.known[0].Tail == nil || len(src.known[0].Tail.Messages) != 1) {
				t.Errorf("the claim planned from %+v", src.known[0])
			}
		})
	}
}
