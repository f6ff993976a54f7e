package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// testUnitsGone: every path that deletes messages deletes every unit of
// search holding their text, whichever message names it. A trim (message
// retention) below the echo answer deletes the lone question's unit, the
// tool rounds' (named by a tool result, and by the reply after one) and
// the echo question's, named by its reply, which stays, and by itself,
// as indexed before that reply came; only the foxtrot unit is left. A purge and an erasure leave none.
func testUnitsGone(t *testing.T, e *Env) {
	ctx := context.Background()
	s, all := unitsSession(t, e, "alice")
	if got := unitTexts(t, e, s); len(got) != 7 {
		t.Fatalf("indexed %d units: %q, want 7", len(got), got)
	}
	before := all[9].Seq
	record := func(s *sessions.Session, tl *history.Tail, gone []history.Message, done bool) error {
		history.Trim(s, tl, gone, before, done, all[9].CreatedAt)
		return nil
	}
	if _, done, err := e.DB.TrimMessages(ctx, s.ID, before, 100, record); err != nil || !done {
		t.Fatalf("trim: %v %v", done, err)
	}
	if got, want := unitTexts(t, e, s), []string{"foxtrot question+foxtrot answer"}; !slices.Equal(got, want) {
		t.Errorf("units after a trim below seq %d: %q, want %q", before, got, want)
	}

	purged, _ := unitsSession(t, e, "alice")
	e.Purge(t, "alice", purged)
	erased, _ := unitsSession(t, e, "bob")
	Must[int](t)(e.DB.DeleteUserDocuments(ctx, "bob"))
	for _, u := range []string{"alice", "bob"} {
		if n := Must[int](t)(e.DB.CountUnits(ctx, u)); n != map[string]int{"alice": 1, "bob": 0}[u] { // alice's trimmed session keeps one
			t.Errorf("%s has %d units after a purge or an erasure", u, n)
		}
	}
	if got := unitTexts(t, e, erased); len(got) != 0 {
		t.Errorf("units after an erasure: %q", got)
	}
}

// unitsSession stores a session of user whose units of search are named
// every way a unit can be (a lone question, a question's reply, a tool
// result whose reply called tools again, a reply after tool results),
// indexes them all, and returns it with its messages: the bravo question
// (seq 8) is answered at 9, so a trim below 9 splits that unit.
func unitsSession(t *testing.T, e *Env, user string) (*sessions.Session, []history.Message) {
	t.Helper()
	ctx := context.Background()
	s := e.NewSession(t, user)
	Must[[]history.Message](t)(e.Append(ctx, s, "",
		history.Draft{Role: history.RoleUser, Content: "alpha question left alone"},
		history.Draft{Role: history.RoleUser, Content: "bravo question"},
		history.Draft{Role: history.RoleAssistant, Content: "bravo answer"},
		history.Draft{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call("c1")}},
		history.Draft{Role: history.RoleTool, ToolCallID: "c1", Content: "charlie result"},
		history.Draft{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call("c2")}},
		history.Draft{Role: history.RoleTool, ToolCallID: "c2", Content: "delta result"},
		history.Draft{Role: history.RoleAssistant, Content: "delta answer"},
		history.Draft{Role: history.RoleUser, Content: "echo question"},
		history.Draft{Role: history.RoleAssistant, Content: "echo answer"},
		history.Draft{Role: history.RoleUser, Content: "foxtrot question"},
		history.Draft{Role: history.RoleAssistant, Content: "foxtrot answer"},
	))
	all := e.All(t, s)
	for _, u := range recall.Units(all) {
		x := recall.Unit{UserID: user, SessionID: s.ID, Model: "test/2", Vector: []float32{1, 0}}
		if u.Question != nil {
			x.Question = excerptOf(u.Question)
		}
		if u.Reply != nil {
			x.Reply = excerptOf(u.Reply)
		}
		for _, m := range u.Tools {
			x.Tools = append(x.Tools, excerptOf(m))
		}
		noErr(t, e.DB.SaveUnit(ctx, x))
	}
	// The echo question as indexed alone, before its reply came.
	noErr(t, e.DB.SaveUnit(ctx, recall.Unit{UserID: user, SessionID: s.ID, Model: "test/2", Vector: []float32{1, 0}, Question: excerptOf(&all[8])}))
	return s, all
}

func excerptOf(m *history.Message) recall.Excerpt {
	return recall.Excerpt{ID: m.ID, Seq: m.Seq, Content: m.Content, CreatedAt: m.CreatedAt}
}

// unitTexts lists the units stored under s, as the words they hold.
func unitTexts(t *testing.T, e *Env, s *sessions.Session) []string {
	t.Helper()
	hits := Must[[]recall.Hit](t)(e.DB.Nearest(context.Background(), recall.Query{UserID: s.UserID, SessionID: s.ID, Vector: []float32{1, 0}, K: 50}))
	var out []string
	for _, h := range hits {
		x := h.Unit
		words := x.Question.Content
		for _, tl := range x.Tools {
			words += "+" + tl.Content
		}
		out = append(out, words+"+"+x.Reply.Content)
	}
	slices.Sort(out)
	return out
}
