package sessions

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/chatmemory/backend/kernel/errs"
)

// A session's messages form a tree. Each message has a parent: the
// message before it in the conversation it continues (-1 for a first
// message). Almost every message continues the one written just before it
// (seq-1); those that do not (a regenerated reply, an edited message, a
// message sent after switching to another branch) are forks, and a
// session records them all, so its whole tree is known from the session
// document alone. The active branch is the path from the first message to
// the active leaf; new messages continue it.

// MaxForks is how many forks a session may have: its tree lives in the
// session document, which stays small however the session branches.
const MaxForks = 1000

// Branches is the tree of a session that was branched. A session never
// branched has none: each of its messages follows the one before.
type Branches struct {
	Leaf  int    `json:"leaf" firestore:"leaf"`   // seq of the active branch's last message
	Forks []Fork `json:"forks" firestore:"forks"` // by Seq
}

// MarshalJSON writes no forks as an empty list, never null (a session
// switched to an earlier message before it ever forked has none).
func (b Branches) MarshalJSON() ([]byte, error) {
	type plain Branches // without this method
	if b.Forks == nil {
		b.Forks = []Fork{}
	}
	return json.Marshal(plain(b))
}

// Fork is a message whose parent is not the message written before it.
type Fork struct {
	Seq    int `json:"seq" firestore:"seq"`
	Parent int `json:"parent" firestore:"parent"` // -1: the message starts the conversation
}

// Span is the messages From..To (inclusive) of a branch, each the parent
// of the next.
type Span struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Path is a branch from a first message, as spans in order; its seqs
// increase along it, as a message is always written after its parent.
type Path []Span

// Contains reports whether message seq is on p.
func (p Path) Contains(seq int) bool {
	for _, sp := range p {
		if seq >= sp.From && seq <= sp.To {
			return true
		}
	}
	return false
}

// Start is the seq of p's first message (-1 for an empty path).
func (p Path) Start() int {
	if len(p) == 0 {
		return -1
	}
	return p[0].From
}

// From is the seq of p's first message at or after seq (-1 if none): the
// first still stored, given the session's HistoryFrom.
func (p Path) From(seq int) int {
	for _, sp := range p {
		if sp.To >= seq {
			return max(sp.From, seq)
		}
	}
	return -1
}

// Upto is the part of p up to and including seq.
func (p Path) Upto(seq int) Path {
	var out Path
	for _, sp := range p {
		if sp.From > seq {
			break
		}
		out = append(out, Span{From: sp.From, To: min(sp.To, seq)})
	}
	return out
}

func (b *Branches) clone() *Branches {
	if b == nil {
		return nil
	}
	return &Branches{Leaf: b.Leaf, Forks: slices.Clone(b.Forks)}
}

// OffPath is the messages written so far that are not on the active
// branch (edited away, regenerated, or on a branch switched from), as
// spans; nil for a session never branched. It changes only when the
// active branch does otherwise than by a new message at its end, so a
// copy kept since its last change still tells every message off the
// branch: any message written later is on it.
func (s *Session) OffPath() Path {
	if s.Branches == nil {
		return nil
	}
	var off Path
	next := 0
	for _, sp := range s.Path() {
		if sp.From > next {
			off = append(off, Span{From: next, To: sp.From - 1})
		}
		next = sp.To + 1
	}
	if next < s.NextSeq {
		off = append(off, Span{From: next, To: s.NextSeq - 1})
	}
	return off
}

// Path is the active branch.
func (s *Session) Path() Path { return s.PathTo(s.Leaf()) }

// PathTo is the branch that ends at message leaf.
func (s *Session) PathTo(leaf int) Path {
	var rev Path
	var forks []Fork
	if s.Branches != nil {
		forks = s.Branches.Forks
	}
	for cur := leaf; cur >= 0; {
		// The latest fork at or before cur starts cur's span; each message
		// after it continues the one before.
		i := sort.Search(len(forks), func(i int) bool { return forks[i].Seq > cur }) - 1
		if i < 0 {
			rev = append(rev, Span{From: 0, To: cur})
			break
		}
		rev = append(rev, Span{From: forks[i].Seq, To: cur})
		cur = forks[i].Parent
	}
	slices.Reverse(rev)
	return rev
}

// Siblings are the seqs of the messages that share message seq's parent,
// itself included, in the order they were written.
func (s *Session) Siblings(seq int) []int { return s.Children(s.Parent(seq)) }

// Parent is the seq of message seq's parent; -1 for a first message.
func (s *Session) Parent(seq int) int {
	if f, ok := s.Branches.fork(seq); ok {
		return f.Parent
	}
	return seq - 1
}

// LatestLeaf is the leaf a switch to message seq makes active: from seq
// down, always the latest version, as chat apps show a branch.
func (s *Session) LatestLeaf(seq int) int {
	for {
		ch := s.Children(seq)
		if len(ch) == 0 {
			return seq
		}
		seq = ch[len(ch)-1]
	}
}

// Children are the seqs of the messages whose parent is seq (-1: the
// messages that start a conversation), in the order they were written.
func (s *Session) Children(seq int) []int {
	var out []int
	if next := seq + 1; next < s.NextSeq {
		if _, forked := s.Branches.fork(next); !forked {
			out = append(out, next)
		}
	}
	if s.Branches != nil {
		for _, f := range s.Branches.Forks {
			if f.Parent == seq {
				out = append(out, f.Seq)
			}
		}
	}
	slices.Sort(out)
	return out
}

// fork returns the fork of message seq, if it is one.
func (b *Branches) fork(seq int) (Fork, bool) {
	if b == nil {
		return Fork{}, false
	}
	i := sort.Search(len(b.Forks), func(i int) bool { return b.Forks[i].Seq >= seq })
	if i < len(b.Forks) && b.Forks[i].Seq == seq {
		return b.Forks[i], true
	}
	return Fork{}, false
}

// SetLeaf makes the branch ending at message leaf the active one; the next
// message continues it.
func (s *Session) SetLeaf(leaf int) {
	if s.Branches == nil {
		if leaf == s.NextSeq-1 {
			return
		}
		s.Branches = &Branches{}
	}
	s.Branches.Leaf = leaf
}

// Continue records that message seq (the next to be written) continues the
// active branch, and makes it the leaf. It returns seq's parent.
func (s *Session) Continue(seq int) (int, error) {
	parent := s.Leaf()
	if parent == seq-1 {
		if s.Branches != nil {
			s.Branches.Leaf = seq
		}
		return parent, nil
	}
	if s.Branches == nil {
		s.Branches = &Branches{}
	}
	if len(s.Branches.Forks) >= MaxForks {
		return 0, errs.Errorf(errs.ETOOLARGE, "the session has %d branches, the most one session can have; start a new session", MaxForks)
	}
	s.Branches.Forks = append(s.Branches.Forks, Fork{Seq: seq, Parent: parent})
	s.Branches.Leaf = seq
	return parent, nil
}

// Leaf is the seq of the active branch's last message; -1 if there is none.
func (s *Session) Leaf() int {
	if s.Branches == nil {
		return s.NextSeq - 1
	}
	return s.Branches.Leaf
}
