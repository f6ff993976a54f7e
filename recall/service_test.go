package recall

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// TestRank: units of deleted sessions, of other users and off their
// session's active branch (as the Visibility read beside the legs tells)
// are dropped, and a unit without its session's title is shown with its
// session's as read, unless that session is gone or deleted; a message
// holding the query as written (case aside) ranks first and is the one
// shown, otherwise the one holding more of its words (else the reply); a
// quoted query keeps only phrase matches; each result says why it matched
// and its session's status; the limit holds.
func TestRank(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	found := func(session, user string, score float64, words, meaning bool, q, a string) fused {
		return fused{hit: Hit{Unit: Unit{UserID: user, SessionID: session, SessionTitle: "t-" + session,
			Question: Excerpt{ID: session + "q", Seq: 0, Content: q, CreatedAt: at},
			Reply:    Excerpt{ID: session + "a", Seq: 1, Content: a, CreatedAt: at}}}, score: score, words: words, meaning: meaning}
	}
	untitled := func(f fused, s *sessions.Session) fused {
		f.hit.Unit.SessionTitle, f.hit.Session = "", s
		return f
	}
	all := []fused{
		found("near", "alice", 0.03, false, true, "what about trains", "take the night train"),
		found("gone", "alice", 0.05, true, true, "deleted", "deleted"),
		found("bobs", "bob", 0.04, true, true, "bob", "bob"),
		found("exact", "alice", 0.01, true, false, "which PDF Library?", "pypdf"),
		found("words", "alice", 0.02, true, false, "hello", "the library of PDF files, PDF files in a library"),
		found("edited", "alice", 0.06, true, true, "pdf library", "pdf library"),
		untitled(found("old", "alice", 0.015, true, false, "pdf", "library"), &sessions.Session{ID: "old", UserID: "alice", Title: "Old one", Status: sessions.StatusActive}),
		untitled(found("olddeleted", "alice", 0.5, true, false, "pdf", "library"), &sessions.Session{ID: "olddeleted", UserID: "alice", Status: sessions.StatusDeleted}),
		untitled(found("purged", "alice", 1, true, true, "pdf", "library"), nil),
	}
	vis := Visibility{Deleted: []string{"gone"}, Archived: []string{"exact"}, OffPath: map[string]sessions.Path{"edited": {{From: 0, To: 1}}}}
	got := rank(retrieved{found: all, visibility: vis}, "alice", "pdf library", false, 10)
	var order []string
	for _, r := range got {
		order = append(order, r.SessionID+"/"+r.MessageID)
	}
	if want := "[exact/exactq near/neara words/wordsa old/oldq]"; fmt.Sprint(order) != want {
		t.Fatalf("ranked %v, want %s", order, want)
	}
	if !got[0].Exact || got[0].Role != history.RoleUser || got[1].Exact || got[1].SessionTitle != "t-near" || got[3].SessionTitle != "Old one" {
		t.Fatalf("ranked %+v", got)
	}
	if !slices.Equal(got[0].Matched, []string{MatchedWords}) || !slices.Equal(got[1].Matched, []string{MatchedMeaning}) {
		t.Errorf("matched %v, %v", got[0].Matched, got[1].Matched)
	}
	if got[0].Score <= got[1].Score || got[0].CreatedAt != "2026-03-01T12:00:00Z" || got[0].Status != sessions.StatusArchived || got[1].Status != sessions.StatusActive {
		t.Fatalf("scores and statuses %+v, %+v", got[0], got[1])
	}
	for _, tc := range []struct {
		name   string
		query  string
		quoted bool
		limit  int
		want   string
	}{
		{"limit 1", "pdf library", false, 1, "[exact]"},
		{"quoted: the phrase only", "PDF library", true, 10, "[exact]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for _, r := range rank(retrieved{found: all, visibility: vis}, "alice", tc.query, tc.quoted, tc.limit) {
				ids = append(ids, r.SessionID)
			}
			if fmt.Sprint(ids) != tc.want {
				t.Errorf("%v, want %s", ids, tc.want)
			}
		})
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", 60) + "THE NEEDLE here " + strings.Repeat("dolor sit ", 60)
	for _, tc := range []struct {
		name, text, q string
		want          func(string) bool
	}{
		{"short text whole, one line", "a\n\tb  c", "b", func(s string) bool { return s == "a b c" }},
		{"around the match", long, "the needle", func(s string) bool {
			return strings.Contains(s, "THE NEEDLE") && strings.HasPrefix(s, "…") && strings.HasSuffix(s, "…") && len([]rune(s)) <= snippetChars+2
		}},
		{"no match: the start", long, "absent", func(s string) bool { return strings.HasPrefix(s, "lorem") && strings.HasSuffix(s, "…") }},
	} {
		if got := snippet(tc.text, tc.q); !tc.want(got) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

// TestUnits: a session's messages become the units indexing makes:
// each reply with its question; a reply after tool results with those
// results; the results of a round whose reply called tools again together;
// every other message with text on its own (an opening reply, a question
// left unanswered, a reply whose question has no text); tool calls not.
func TestUnits(t *testing.T) {
	msg := func(seq, parent int, role history.Role, content string) history.Message {
		return history.Message{ID: fmt.Sprint("m", seq), Seq: seq, ParentSeq: parent, Role: role, Content: content}
	}
	call := func(seq, parent int) history.Message {
		m := msg(seq, parent, history.RoleAssistant, "")
		m.ToolCalls = []history.ToolCall{{ID: fmt.Sprint("c", seq)}}
		return m
	}
	for _, tc := range []struct {
		name string
		msgs []history.Message
		want string
	}{
		{"a session", []history.Message{
			msg(0, -1, history.RoleAssistant, "Welcome!"),
			msg(1, 0, history.RoleUser, "q1"), msg(2, 1, history.RoleAssistant, "a1"),
			msg(3, 2, history.RoleUser, "look it up"), call(4, 3), msg(5, 4, history.RoleTool, "result"),
			msg(6, 5, history.RoleAssistant, "found it"),
			msg(7, 1, history.RoleAssistant, "a1, regenerated"),
			msg(8, 6, history.RoleUser, "unanswered"),
		}, "[q1|a1 result|found it q1|a1, regenerated Welcome! look it up unanswered]"},
		{"two tool rounds", []history.Message{
			msg(0, -1, history.RoleUser, "weather in Oslo and Bergen"), call(1, 0),
			msg(2, 1, history.RoleTool, "Oslo: sun"), msg(3, 2, history.RoleTool, "Bergen: rain"), call(4, 3),
			msg(5, 4, history.RoleTool, "Tromsø: snow"), msg(6, 5, history.RoleAssistant, "sun, rain and snow"),
		}, "[Tromsø: snow|sun, rain and snow weather in Oslo and Bergen Oslo: sun|Bergen: rain]"},
		{"a turn's results and answer, without their call", []history.Message{
			msg(5, 4, history.RoleTool, "r1"), msg(6, 5, history.RoleTool, "r2"), msg(7, 6, history.RoleAssistant, "done"),
		}, "[r1|r2|done]"},
		{"results whose answer calls again", []history.Message{
			msg(5, 4, history.RoleTool, "r1"), call(6, 5),
		}, "[r1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, u := range Units(tc.msgs) {
				got = append(got, strings.Join(u.texts(), "|"))
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("units %v, want %s", got, tc.want)
			}
		})
	}
}

// TestRankShowsToolResults: a tool round's unit shows the result that
// holds the query (role tool), and its answer when none does; a result
// off its session's active branch drops the unit.
func TestRankShowsToolResults(t *testing.T) {
	x := Unit{UserID: "alice", SessionID: "s", SessionTitle: "Weather",
		Tools: []Excerpt{{ID: "t1", Seq: 2, Content: "Oslo: sun"}, {ID: "t2", Seq: 3, Content: "Bergen: rain, LayerCake"}},
		Reply: Excerpt{ID: "a", Seq: 4, Content: "sun and rain"}}
	for _, tc := range []struct {
		name, query string
		off         sessions.Path
		want        string
	}{
		{"the result holding the query", "layercake", nil, "t2 tool"},
		{"the answer when none does", "weather", nil, "a assistant"},
		{"a result off the branch", "layercake", sessions.Path{{From: 3, To: 3}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vis := Visibility{OffPath: map[string]sessions.Path{"s": tc.off}}
			got := rank(retrieved{found: []fused{{hit: Hit{Unit: x}, score: 0.1, words: true}}, visibility: vis}, "alice", tc.query, false, 10)
			var shown string
			if len(got) > 0 {
				shown = got[0].MessageID + " " + string(got[0].Role)
			}
			if shown != tc.want {
				t.Errorf("shown %q, want %q", shown, tc.want)
			}
		})
	}
}
