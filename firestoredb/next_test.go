package firestoredb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

func nextMsg(seq, parent int, content string) history.Message {
	return history.Message{ID: fmt.Sprint("m", seq), SessionID: "s1", Seq: seq, ParentSeq: parent, Role: history.RoleUser,
		Content: content, CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Tokens: 3}
}

func seqsOf(t *history.Tail) []int {
	var out []int
	for _, m := range t.Messages {
		out = append(out, m.Seq)
	}
	return out
}

// TestNextOf: a session's tailNext is part of its tail only while it
// continues the tail document: newer than its newest message and answering it,
// on the active branch, and below the session's next seq.
func TestNextOf(t *testing.T) {
	held := &history.Tail{Messages: []history.Message{nextMsg(3, 2, "a"), nextMsg(4, 3, "b"), nextMsg(5, 4, "c")}}
	plain := &sessions.Session{ID: "s1", NextSeq: 7}
	forked := &sessions.Session{ID: "s1", NextSeq: 8, Branches: &sessions.Branches{Leaf: 7, Forks: []sessions.Fork{{Seq: 7, Parent: 5}}}}
	entry := func(m history.Message) []byte { return encodeEntry(&m) }
	for _, tc := range []struct {
		name string
		n    *tailNextDoc
		s    *sessions.Session
		want []int // nil: not part of the tail
	}{
		{"none", nil, plain, nil},
		{"continues the window", &tailNextDoc{From: 3, Entry: entry(nextMsg(6, 5, "d"))}, plain, []int{3, 4, 5, 6}},
		{"with the front dropped", &tailNextDoc{From: 4, Entry: entry(nextMsg(6, 5, "d"))}, plain, []int{4, 5, 6}},
		{"the window holds it", &tailNextDoc{From: 3, Entry: entry(nextMsg(5, 4, "c"))}, plain, nil},
		{"answers an older message", &tailNextDoc{From: 3, Entry: entry(nextMsg(6, 4, "d"))}, plain, nil},
		{"at or past the next seq", &tailNextDoc{From: 3, Entry: entry(nextMsg(7, 5, "d"))}, plain, nil},
		{"off the active branch", &tailNextDoc{From: 3, Entry: entry(nextMsg(6, 5, "d"))}, forked, nil},
		{"malformed", &tailNextDoc{From: 3, Entry: []byte{9, 9}}, plain, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nextOf(tc.n, held, tc.s)
			switch {
			case tc.want == nil && ok:
				t.Errorf("applied: %v", seqsOf(got))
			case tc.want != nil && (!ok || fmt.Sprint(seqsOf(got)) != fmt.Sprint(tc.want)):
				t.Errorf("got %v (%v), want %v", got, ok, tc.want)
			}
		})
	}
}

// TestDeferTail: a commit carries its message in the session document
// only for a claim's plain append to a tail document that exists, and only when
// reading it back gives the commit's tail exactly.
func TestDeferTail(t *testing.T) {
	held := &history.Tail{Messages: []history.Message{nextMsg(3, 2, "a"), nextMsg(4, 3, "b"), nextMsg(5, 4, "c")}}
	base := func() (*stored, *sessions.Session, *history.Tail, []history.Message) {
		st := &stored{exists: true, tailDoc: &tailDoc{}, docTail: held, t: held}
		s := &sessions.Session{ID: "s1", NextSeq: 7, Bookkeeping: sessions.Bookkeeping{Answering: &sessions.Answering{Seq: 6}}}
		m := nextMsg(6, 5, "d")
		tl := &history.Tail{Messages: append(append([]history.Message(nil), held.Messages...), m)}
		return st, s, tl, []history.Message{m}
	}
	for _, tc := range []struct {
		name   string
		change func(st *stored, s *sessions.Session, tl *history.Tail, created *[]history.Message)
		want   int // the From of the tailNext, or -1 for none
	}{
		{"a claim's append", func(*stored, *sessions.Session, *history.Tail, *[]history.Message) {}, 3},
		{"dropping the front", func(_ *stored, _ *sessions.Session, tl *history.Tail, _ *[]history.Message) {
			tl.Messages = tl.Messages[1:]
		}, 4},
		{"no window yet", func(st *stored, _ *sessions.Session, _ *history.Tail, _ *[]history.Message) { st.tailDoc = nil }, -1},
		{"a new session", func(st *stored, _ *sessions.Session, _ *history.Tail, _ *[]history.Message) { st.exists = false }, -1},
		{"a carried message already in use", func(st *stored, _ *sessions.Session, _ *history.Tail, _ *[]history.Message) { st.nextApplied = true }, -1},
		{"a reply (no lease)", func(_ *stored, s *sessions.Session, _ *history.Tail, _ *[]history.Message) {
			s.Bookkeeping.Answering = nil
		}, -1},
		{"two messages", func(_ *stored, _ *sessions.Session, tl *history.Tail, created *[]history.Message) {
			m := nextMsg(7, 6, "e")
			tl.Messages = append(tl.Messages, m)
			*created = append(*created, m)
		}, -1},
		{"a new summary", func(_ *stored, _ *sessions.Session, tl *history.Tail, _ *[]history.Message) {
			tl.Compaction = &history.Compaction{EndSeq: 3}
		}, -1},
		{"a large message", func(_ *stored, _ *sessions.Session, tl *history.Tail, created *[]history.Message) {
			m := nextMsg(6, 5, strings.Repeat("x", maxNextBytes))
			tl.Messages[len(tl.Messages)-1], (*created)[0] = m, m
		}, -1},
		{"another branch", func(_ *stored, _ *sessions.Session, tl *history.Tail, created *[]history.Message) {
			m := nextMsg(6, 4, "d")
			tl.Messages = append(tl.Messages[:2:2], m)
			(*created)[0] = m
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, s, tl, created := base()
			tc.change(st, s, tl, &created)
			n := deferTail(st, s, tl, created)
			switch {
			case tc.want < 0 && n != nil:
				t.Errorf("carried from %d", n.From)
			case tc.want >= 0 && (n == nil || n.From != tc.want):
				t.Errorf("got %+v, want one from %d", n, tc.want)
			}
		})
	}
}
