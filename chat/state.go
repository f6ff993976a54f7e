package chat

import (
	"slices"

	"github.com/chatmemory/backend/history"
)

// Apply returns the state a committed write w leaves, given the state st
// it was planned on: the session and tail it writes, the messages it
// stores as the query's key message (Asked) or reply (Answer), the slot
// it takes, the tokens it adds and the draft it starts or ends. It is the
// one rule of what a turn's commit does; a store persists w and adds only
// what it alone knows to the result: its Version, and the DraftVersion of
// a draft it started.
func (st *TurnState) Apply(q TurnQuery, w *TurnWrite) *TurnState {
	out := *st
	out.Version, out.Slots, out.SlotVersions = nil, slices.Clone(st.Slots), slices.Clone(st.SlotVersions)
	if w.Session != nil {
		out.Session = w.Session
	}
	if w.Tail != nil {
		out.Tail = w.Tail
	}
	for i := range w.Messages {
		m := w.Messages[i]
		switch {
		case q.AskedID == "" && q.Key != "" && m.ID == history.KeyedMessageID(q.Key, 0):
			out.Asked = &m
		case q.ReplyID != "" && m.ID == q.ReplyID:
			out.Answer = &m
		}
	}
	if w.Slot >= 0 && w.Slot < len(out.Slots) {
		out.Slots[w.Slot] = w.Minute
	}
	out.DayTokens += w.Tokens
	if d := w.Draft; d != nil {
		out.DraftReplyID, out.DraftVersion = "", nil
		if d.Create {
			out.DraftReplyID = d.ReplyID
		}
	}
	return &out
}
