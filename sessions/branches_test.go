package sessions

import (
	"reflect"
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
)

// tree builds a session by writing messages whose parents are given in
// order: parents[i] is the parent of message i.
func tree(t *testing.T, parents ...int) *Session {
	t.Helper()
	s := &Session{}
	for seq, p := range parents {
		s.SetLeaf(p)
		got, err := s.Continue(seq)
		if err != nil {
			t.Fatal(err)
		}
		if got != p {
			t.Fatalf("message %d: parent %d, want %d", seq, got, p)
		}
		s.NextSeq++
	}
	return s
}

func TestBranches(t *testing.T) {
	// 0 user, 1 reply, 2 user, 3 reply; 4 regenerates 3 (parent 2);
	// 5 edits 2 (parent 1), 6 answers 5; 7 edits 0 (a first message).
	s := tree(t, -1, 0, 1, 2, 2, 1, 5, -1)
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"Leaf", s.Leaf(), 7},
		{"Forks", s.Branches.Forks, []Fork{{4, 2}, {5, 1}, {7, -1}}},
		{"PathToRegenerated", s.PathTo(4), Path{{0, 2}, {4, 4}}},
		{"PathToEdited", s.PathTo(6), Path{{0, 1}, {5, 6}}},
		{"PathToOriginal", s.PathTo(3), Path{{0, 3}}},
		{"PathToFirstEdit", s.Path(), Path{{7, 7}}},
		{"ChildrenOfUser", s.Children(2), []int{3, 4}},
		{"ChildrenOfReply", s.Children(1), []int{2, 5}},
		{"FirstMessages", s.Children(-1), []int{0, 7}},
		{"SiblingsOfEdit", s.Siblings(5), []int{2, 5}},
		{"NoSiblings", s.Siblings(6), []int{6}},
		{"LatestLeafUnderFirst", s.LatestLeaf(0), 6},
		{"LatestLeafUnderOriginalUser", s.LatestLeaf(2), 4},
		{"Parent", s.Parent(6), 5},
		{"Upto", s.PathTo(6).Upto(5), Path{{0, 1}, {5, 5}}},
		{"Contains", []bool{s.PathTo(6).Contains(2), s.PathTo(6).Contains(5)}, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestLinearSessionHasNoBranches(t *testing.T) {
	s := tree(t, -1, 0, 1, 2)
	if s.Branches != nil {
		t.Fatalf("a session never branched records %+v", s.Branches)
	}
	if got, want := s.Path(), (Path{{0, 3}}); !reflect.DeepEqual(got, want) {
		t.Errorf("path %v, want %v", got, want)
	}
	if got := (&Session{}).Path(); len(got) != 0 {
		t.Errorf("an empty session's path is %v", got)
	}
}

func TestForksAreCapped(t *testing.T) {
	s := &Session{Branches: &Branches{Forks: make([]Fork, MaxForks)}, NextSeq: 5}
	s.SetLeaf(1)
	if _, err := s.Continue(5); errs.CodeOf(err) != errs.ETOOLARGE {
		t.Fatalf("fork past the cap: %v", err)
	}
}

func TestCloneCopiesBranches(t *testing.T) {
	s := tree(t, -1, 0, 0)
	c := s.Clone()
	c.Branches.Forks[0].Parent = 9
	if s.Branches.Forks[0].Parent != 0 {
		t.Fatal("a clone shares its branches")
	}
}

// TestOffPath: the messages off the active branch, as spans; nothing for a
// session never branched; unchanged when the branch grows at its end.
func TestOffPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parents []int
		leaf    int // -2: as written
		want    Path
	}{
		{"never branched", []int{-1, 0, 1, 2}, -2, nil},
		{"a regenerated reply", []int{-1, 0, 0}, -2, Path{{1, 1}}},
		{"an edited question and its reply", []int{-1, 0, 1, 2, 1, 4}, -2, Path{{2, 3}}},
		{"the edit grown at its end", []int{-1, 0, 1, 2, 1, 4, 5, 6}, -2, Path{{2, 3}}},
		{"switched back to the first version", []int{-1, 0, 1, 2, 1, 4}, 3, Path{{4, 5}}},
		{"an edited first message", []int{-1, 0, -1, 2}, -2, Path{{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tree(t, tc.parents...)
			if tc.leaf != -2 {
				s.SetLeaf(tc.leaf)
			}
			if got := s.OffPath(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OffPath %v, want %v (path %v)", got, tc.want, s.Path())
			}
		})
	}
}
