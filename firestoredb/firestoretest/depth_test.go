package firestoretest

import (
	"testing"
	"time"
)

// TestDepth: RPCs that overlap count once, RPCs one after another count
// each, only those sent in the tail document count, and one unanswered ends at
// the tail document's end.
func TestDepth(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		spans [][2]int // start, end in ms (end -1: unanswered)
		want  int
	}{
		{"none", nil, 0},
		{"one", [][2]int{{1, 5}}, 1},
		{"a read then a commit", [][2]int{{1, 5}, {6, 10}}, 2},
		{"a query beside the commit", [][2]int{{1, 5}, {6, 10}, {7, 12}}, 2},
		{"a query and then a read beside the commit", [][2]int{{1, 5}, {6, 20}, {7, 9}, {10, 12}}, 3},
		{"sent before the window", [][2]int{{-5, 2}, {3, 4}}, 1},
		{"unanswered", [][2]int{{1, -1}, {50, 60}}, 1},
	} {
		c := &Counter{}
		for _, s := range tc.spans {
			p := &span{start: ms(s[0])}
			if s[1] >= 0 {
				p.end = ms(s[1])
			}
			c.spans.all = append(c.spans.all, p)
		}
		if got := c.Depth(t0, ms(100)); got != tc.want {
			t.Errorf("%s: depth %d, want %d", tc.name, got, tc.want)
		}
	}
}
