package recall

import (
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// TestRank: deleted sessions and other users' are dropped, an exact
// phrase (case aside) ranks above any match by meaning and picks the
// message that holds it, otherwise the reply is shown, and the limit
// holds.
func TestRank(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	session := func(id, user string, st sessions.Status) *sessions.Session {
		return &sessions.Session{ID: id, UserID: user, Title: "t-" + id, Status: st}
	}
	hit := func(s *sessions.Session, d float64, q, a string) Hit {
		return Hit{Exchange: Exchange{UserID: "alice", SessionID: s.ID, Question: Excerpt{ID: s.ID + "q", Content: q, CreatedAt: at},
			Reply: Excerpt{ID: s.ID + "a", Content: a, CreatedAt: at}}, Distance: d, Session: s}
	}
	hits := []Hit{
		hit(session("near", "alice", sessions.StatusActive), 0.1, "what about trains", "take the night train"),
		hit(session("gone", "alice", sessions.StatusDeleted), 0.05, "deleted", "deleted"),
		hit(session("bobs", "bob", sessions.StatusActive), 0.01, "bob", "bob"),
		hit(session("exact", "alice", sessions.StatusArchived), 0.9, "which PDF Library?", "pypdf"),
		hit(session("far", "alice", sessions.StatusActive), 0.95, "unrelated", "unrelated"),
		{Exchange: Exchange{UserID: "alice", SessionID: "nosession"}, Distance: 0},
	}
	got := rank(hits, "pdf library", 10)
	if len(got) != 2 || got[0].SessionID != "exact" || !got[0].Exact || got[0].MessageID != "exactq" || got[0].Role != history.RoleUser ||
		got[1].SessionID != "near" || got[1].Exact || got[1].MessageID != "neara" || got[1].SessionTitle != "t-near" {
		t.Fatalf("ranked %+v", got)
	}
	if got[0].Score <= got[1].Score || got[1].Score < 0.89 || got[0].CreatedAt != "2026-03-01T12:00:00Z" || got[0].Status != sessions.StatusArchived {
		t.Fatalf("scores %v, %v", got[0], got[1])
	}
	if got := rank(hits, "pdf library", 1); len(got) != 1 {
		t.Fatalf("limit 1: %d", len(got))
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
