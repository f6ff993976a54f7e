package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
)

// testRollUpStore: longterm.RollUpStore and the history in the memory
// document. The sessions updated after a moment are listed, whole, in
// pages; a stored history comes back as it was saved, and its user is
// listed once its DueAt has come; the roll-up mark is kept.
func testRollUpStore(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	old := e.NewSession(t, "carol")
	e.Say(t, old, history.RoleUser, "long ago")
	e.Clock.Advance(time.Hour)
	since := e.Clock.Now()
	for _, u := range []string{"alice", "bob", "alice"} {
		e.Clock.Advance(time.Minute)
		e.Say(t, e.NewSession(t, u), history.RoleUser, "hello")
	}
	var users []string
	var cursor *sessions.Cursor
	for pages := 0; ; pages++ {
		page, next, err := db.SessionsUpdatedSince(ctx, since, cursor, 1)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, s := range page {
			if s.MessageCount != 1 || !s.UpdatedAt.After(since) {
				t.Errorf("session updated since %v: %+v", since, s)
			}
			users = append(users, s.UserID)
		}
		if next == nil {
			break
		}
		cursor = next
	}
	if want := []string{"alice", "bob", "alice"}; !slices.Equal(users, want) {
		t.Errorf("owners of the sessions updated since: %v, want %v", users, want)
	}

	at := e.Clock.Now()
	u := Must[*longterm.User](t)(db.GetUser(ctx, "alice"))
	u.History = longterm.History{
		Recent:     longterm.Tier{Text: "Mar 10: hello", UpdatedAt: &at, Sessions: []string{old.ID}},
		Episodes:   []longterm.Episode{{SessionID: old.ID, Title: "hello", At: at}},
		Notes:      []longterm.MonthNote{{Month: "2026-01", Text: "Worked on x.", Sessions: []string{"s1"}, Episodes: []longterm.Episode{{SessionID: "s1", Title: "x", At: at.AddDate(0, 0, -40)}}}},
		RolledUpAt: at, Prompts: "2",
	}
	u.UpdatedAt = at
	noErr(t, db.SaveMemory(ctx, "alice", u.Version, u, longterm.Change{}))
	got := Must[*longterm.User](t)(db.GetUser(ctx, "alice"))
	if h := got.History; h.Recent.Text != "Mar 10: hello" || !h.Recent.UpdatedAt.Equal(at) || len(h.Episodes) != 1 || !h.Episodes[0].At.Equal(at) ||
		len(h.Notes) != 1 || h.Notes[0].Episodes[0].SessionID != "s1" || !h.RolledUpAt.Equal(at) || h.Prompts != "2" {
		t.Errorf("history as stored: %+v", h)
	}
	due := u.History.DueAt(at)
	rolls := func(now time.Time) []string {
		ids, _, err := db.HistoriesToRoll(ctx, now, nil, 10)
		noErr(t, err)
		return ids
	}
	if got := rolls(due.Add(-time.Second)); len(got) != 0 {
		t.Errorf("due a second early: %v", got)
	}
	if got := rolls(due); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("due at %v: %v, want alice", due, got)
	}

	if m := Must[time.Time](t)(db.RollUpMark(ctx)); !m.IsZero() {
		t.Errorf("a mark before any roll-up: %v", m)
	}
	noErr(t, db.SetRollUpMark(ctx, at))
	if m := Must[time.Time](t)(db.RollUpMark(ctx)); !m.Equal(at) {
		t.Errorf("mark %v, want %v", m, at)
	}
}
