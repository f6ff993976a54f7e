package recall

import (
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// When messages are deleted (a trim under message retention), every unit
// holding any of their text goes with them: a unit is named by one of its
// messages (see UnitMessages), not always by a deleted one (a question deleted
// whose reply stays names the unit by the reply).

// Followers returns the seqs from from on of s's messages, not among
// gone, that may make a unit with one of gone: those whose parent is a
// deleted question or tool result (the next message, or a fork of the
// session's tree, such as a regenerated reply). A trim passes its bound:
// followers below it go in a later page of the trim, with their units.
func Followers(s *sessions.Session, gone []history.Message, from int) []int {
	deleted := make(map[int]bool, len(gone))
	for _, m := range gone {
		deleted[m.Seq] = true
	}
	parents := map[int]bool{}
	var out []int
	for _, m := range gone {
		if m.Role != history.RoleUser && m.Role != history.RoleTool {
			continue
		}
		parents[m.Seq] = true
		if next := m.Seq + 1; next >= from && next < s.NextSeq && !deleted[next] {
			out = append(out, next)
		}
	}
	if s.Branches != nil {
		for _, f := range s.Branches.Forks {
			if parents[f.Parent] && f.Seq >= from && !deleted[f.Seq] && f.Seq != f.Parent+1 {
				out = append(out, f.Seq)
			}
		}
	}
	return out
}

// Holding returns the ids of the units holding text of gone, given the
// followers of gone (see Followers) as more: the units the two make
// together that have a message of gone, and every unit named by one of
// gone (a question indexed alone before its reply came keeps its unit).
func Holding(gone, more []history.Message) []string {
	deleted := make(map[int]bool, len(gone))
	named := make(map[string]bool, len(gone))
	out := make([]string, 0, len(gone))
	for _, m := range gone {
		deleted[m.Seq], named[m.ID] = true, true
		out = append(out, m.ID)
	}
	for _, u := range Units(append(append([]history.Message(nil), gone...), more...)) {
		for _, m := range append([]*history.Message{u.Question, u.Reply}, u.Tools...) {
			if m != nil && deleted[m.Seq] && !named[u.id()] {
				named[u.id()] = true
				out = append(out, u.id())
				break
			}
		}
	}
	return out
}
