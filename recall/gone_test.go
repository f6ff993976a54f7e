package recall_test

import (
	"slices"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// TestHolding: the units holding text of deleted messages are named by
// them, or by a message that follows one of them and stays (a reply
// regenerated to a deleted question, a reply after a deleted tool
// result), which Followers finds from the session's tree.
func TestHolding(t *testing.T) {
	msg := func(seq, parent int, role history.Role, text string) history.Message {
		return history.Message{ID: string(rune('a' + seq)), Seq: seq, ParentSeq: parent, Role: role, Content: text}
	}
	call := history.Message{ID: "c", Seq: 2, ParentSeq: 1, Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "t1"}}}
	all := []history.Message{
		msg(0, -1, history.RoleUser, "question"),
		msg(1, 0, history.RoleAssistant, "first reply"),
		call,
		msg(3, 2, history.RoleTool, "tool result"),
		msg(4, 3, history.RoleAssistant, "answer after the tool"),
		msg(5, 4, history.RoleUser, "later question"),
		msg(6, 0, history.RoleAssistant, "regenerated reply"),
	}
	s := &sessions.Session{ID: "s", NextSeq: 7, Branches: &sessions.Branches{Leaf: 6, Forks: []sessions.Fork{{Seq: 6, Parent: 0}}}}
	for _, tc := range []struct {
		name      string
		before    int
		followers []int
		want      []string
	}{
		{"a question and its first reply, regenerated later", 2, []int{6}, []string{"a", "b", "g"}},
		{"up to the tool result, its answer stays", 4, []int{4, 6}, []string{"a", "b", "c", "d", "e", "g"}},
		{"everything before the later question", 5, []int{6}, []string{"a", "b", "c", "d", "e", "g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone := all[:tc.before]
			seqs := recall.Followers(s, gone, tc.before)
			slices.Sort(seqs)
			if !slices.Equal(seqs, tc.followers) {
				t.Errorf("followers %v, want %v", seqs, tc.followers)
			}
			var more []history.Message
			for _, seq := range seqs {
				more = append(more, all[seq])
			}
			got := recall.Holding(gone, more)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("units %q, want %q", got, tc.want)
			}
		})
	}
}
