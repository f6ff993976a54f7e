package chat

import (
	"reflect"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

func TestApply(t *testing.T) {
	s0 := &sessions.Session{ID: "s", NextSeq: 2}
	s1 := &sessions.Session{ID: "s", NextSeq: 3, Bookkeeping: sessions.Bookkeeping{Answering: &sessions.Answering{Seq: 2, Token: "t"}}}
	t0 := &history.Tail{Messages: []history.Message{{Seq: 0}, {Seq: 1}}}
	t1 := &history.Tail{Messages: []history.Message{{Seq: 0}, {Seq: 1}, {Seq: 2}}}
	keyed := history.Message{ID: history.KeyedMessageID("k", 0), Seq: 2, Role: history.RoleUser}
	reply := history.Message{ID: history.KeyedReplyID("k"), Seq: 3, Role: history.RoleAssistant}
	base := func() *TurnState {
		return &TurnState{Session: s0, Tail: t0, Slots: []int64{0, 5}, DayTokens: 10, DraftReplyID: "old", DraftVersion: 7, Version: "v"}
	}
	q := TurnQuery{Key: "k", ReplyID: history.KeyedReplyID("k")}
	for _, tc := range []struct {
		name string
		q    TurnQuery
		w    *TurnWrite
		want func(*TurnState)
	}{
		{"nothing but the version", q, &TurnWrite{Slot: NoSlot}, func(s *TurnState) {}},
		{"a claim", q, &TurnWrite{Session: s1, Tail: t1, Messages: []history.Message{keyed}, Slot: 0, Minute: 9,
			Draft: &DraftWrite{ReplyID: "r", Create: true}}, func(s *TurnState) {
			s.Session, s.Tail, s.Asked, s.Slots = s1, t1, &keyed, []int64{9, 5}
			s.DraftReplyID, s.DraftVersion = "r", nil
		}},
		{"a regeneration's claim stores no message under the key", TurnQuery{AskedID: "x", Key: "k", ReplyID: "r2"},
			&TurnWrite{Session: s1, Messages: []history.Message{keyed}, Slot: 1, Minute: 9}, func(s *TurnState) {
				s.Session, s.Slots = s1, []int64{0, 9}
			}},
		{"a finish", q, &TurnWrite{Session: s0, Messages: []history.Message{reply}, Slot: NoSlot, Tokens: 40,
			Draft: &DraftWrite{ReplyID: "old"}}, func(s *TurnState) {
			s.Answer, s.DayTokens = &reply, 50
			s.DraftReplyID, s.DraftVersion = "", nil
		}},
		{"a slot out of range is not taken", q, &TurnWrite{Slot: 5, Minute: 9}, func(s *TurnState) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := base()
			got := st.Apply(tc.q, tc.w)
			want := base()
			want.Version = nil
			tc.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Apply =\n%+v, want\n%+v", got, want)
			}
			if !reflect.DeepEqual(st, base()) {
				t.Errorf("Apply changed the state it was given: %+v", st)
			}
		})
	}
}
