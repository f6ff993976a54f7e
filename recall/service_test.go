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

// TestRank: deleted sessions, other users' and units off their session's
// active branch are dropped; a message holding the query as written (case
// aside) ranks first and is the one shown, otherwise the one holding more
// of its words (else the reply); a quoted query keeps only phrase matches;
// each result says why it matched; the limit holds.
func TestRank(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	session := func(id, user string, st sessions.Status) *sessions.Session {
		return &sessions.Session{ID: id, UserID: user, Title: "t-" + id, Status: st, NextSeq: 2}
	}
	found := func(s *sessions.Session, score float64, words, meaning bool, q, a string) fused {
		return fused{hit: Hit{Exchange: Exchange{UserID: "alice", SessionID: s.ID, Question: Excerpt{ID: s.ID + "q", Seq: 0, Content: q, CreatedAt: at},
			Reply: Excerpt{ID: s.ID + "a", Seq: 1, Content: a, CreatedAt: at}}, Session: s}, score: score, words: words, meaning: meaning}
	}
	branched := session("edited", "alice", sessions.StatusActive)
	branched.NextSeq = 4
	branched.Branches = &sessions.Branches{Leaf: 3, Forks: []sessions.Fork{{Seq: 2, Parent: -1}}} // messages 0-1 edited away
	all := []fused{
		found(session("near", "alice", sessions.StatusActive), 0.03, false, true, "what about trains", "take the night train"),
		found(session("gone", "alice", sessions.StatusDeleted), 0.05, true, true, "deleted", "deleted"),
		found(session("bobs", "bob", sessions.StatusActive), 0.04, true, true, "bob", "bob"),
		found(session("exact", "alice", sessions.StatusArchived), 0.01, true, false, "which PDF Library?", "pypdf"),
		found(session("words", "alice", sessions.StatusActive), 0.02, true, false, "hello", "the library of PDF files, PDF files in a library"),
		found(branched, 0.06, true, true, "pdf library", "pdf library"),
		{hit: Hit{Exchange: Exchange{UserID: "alice", SessionID: "nosession"}}, score: 1},
	}
	got := rank(all, Corpus{}, "pdf library", false, 10)
	if len(got) != 3 || got[0].SessionID != "exact" || !got[0].Exact || got[0].MessageID != "exactq" || got[0].Role != history.RoleUser ||
		got[1].SessionID != "near" || got[1].Exact || got[1].MessageID != "neara" || got[1].SessionTitle != "t-near" ||
		got[2].SessionID != "words" || got[2].MessageID != "wordsa" {
		t.Fatalf("ranked %+v", got)
	}
	if !slices.Equal(got[0].Matched, []string{MatchedWords}) || !slices.Equal(got[1].Matched, []string{MatchedMeaning}) {
		t.Errorf("matched %v, %v", got[0].Matched, got[1].Matched)
	}
	if got[0].Score <= got[1].Score || got[0].CreatedAt != "2026-03-01T12:00:00Z" || got[0].Status != sessions.StatusArchived {
		t.Fatalf("scores %v, %v", got[0], got[1])
	}
	if got := rank(all, Corpus{}, "pdf library", false, 1); len(got) != 1 {
		t.Fatalf("limit 1: %d", len(got))
	}
	if got := rank(all, Corpus{}, "PDF library", true, 10); len(got) != 1 || got[0].SessionID != "exact" {
		t.Fatalf("quoted: %+v", got)
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

// TestUnitsOf: a session's messages become the units indexing makes:
// each reply with its question, every other message with text on its own
// (an opening reply, a question left unanswered, a reply whose question
// has no text), tool calls and tool results not.
func TestUnitsOf(t *testing.T) {
	msg := func(seq, parent int, role history.Role, content string) history.Message {
		return history.Message{ID: fmt.Sprint("m", seq), Seq: seq, ParentSeq: parent, Role: role, Content: content}
	}
	call := msg(4, 3, history.RoleAssistant, "")
	call.ToolCalls = []history.ToolCall{{ID: "c1"}}
	all := []history.Message{
		msg(0, -1, history.RoleAssistant, "Welcome!"),
		msg(1, 0, history.RoleUser, "q1"), msg(2, 1, history.RoleAssistant, "a1"),
		msg(3, 2, history.RoleUser, "look it up"), call, msg(5, 4, history.RoleTool, "result"),
		msg(6, 5, history.RoleAssistant, "found it"),
		msg(7, 1, history.RoleAssistant, "a1, regenerated"),
		msg(8, 6, history.RoleUser, "unanswered"),
	}
	var got []string
	for _, u := range unitsOf(all) {
		got = append(got, strings.Join(u.texts(), "|"))
	}
	if want := "[q1|a1 q1|a1, regenerated Welcome! look it up found it unanswered]"; fmt.Sprint(got) != want {
		t.Errorf("units %v, want %s", got, want)
	}
}
