package history

import (
	"slices"
	"time"
)

// Tail is what a session stores to build its context from (the "context"
// documents of a session in Firestore), kept up to date in the same
// transaction as every append: the latest messages verbatim (whole bundles,
// at most the session's budget of tokens and MaxTailBytes of text) and the
// summary in use. A turn's context is built from it alone, so building a
// context costs the same at turn 5 and at turn 5,000. The raw history in
// the messages collection is never touched by it.
type Tail struct {
	Messages   []Message   // oldest first
	Compaction *Compaction // the summary of everything up to its EndSeq; nil if none
	// CompactingUntil is the lease of a compaction in progress.
	CompactingUntil time.Time
}

// MaxTailBytes caps what a tail holds, by StoredBytes. A store keeps the
// tail in bounded pages and writes only the pages an append changes; this
// cap bounds how many pages a tail spans.
const MaxTailBytes = 400 << 10

// add appends msgs and drops the oldest messages while the tail holds more
// than keep tokens or MaxTailBytes. Tool results are dropped with the call
// they answer, never left behind on their own.
func (t *Tail) add(msgs []Message, keep int) {
	for _, m := range msgs {
		t.Messages = append(t.Messages, tailCopy(m))
	}
	tokens, bytes := 0, 0
	for i := range t.Messages {
		tokens += t.Messages[i].Tokens
		bytes += StoredBytes(&t.Messages[i])
	}
	drop := 0
	for drop < len(t.Messages)-1 && (tokens > keep || bytes > MaxTailBytes) {
		tokens -= t.Messages[drop].Tokens
		bytes -= StoredBytes(&t.Messages[drop])
		drop++
		for drop < len(t.Messages)-1 && t.Messages[drop].Role == RoleTool {
			tokens -= t.Messages[drop].Tokens
			bytes -= StoredBytes(&t.Messages[drop])
			drop++
		}
	}
	t.Messages = append([]Message(nil), t.Messages[drop:]...)
}

// StoredBytes bounds from above what a message takes in a tail as a store
// keeps it: its text plus a generous allowance for field names, numbers
// and times (Firestore's storage-size rules give 90 to 250 bytes for the
// fields of a short message; its size function is tested against this).
func StoredBytes(m *Message) int {
	n := 256 + len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += 64 + len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments)
	}
	for _, p := range m.Attachments {
		n += 64 + len(p.ID) + len(p.Type) + len(p.Name) + len(p.Alt)
	}
	return n
}

// SetIDs gives the tail's copies of written the ids the store gave them
// (an append plans messages before the store names them).
func (t *Tail) SetIDs(written []Message) {
	ids := make(map[int]string, len(written))
	for _, m := range written {
		ids[m.Seq] = m.ID
	}
	for i := range t.Messages {
		if id, ok := ids[t.Messages[i].Seq]; ok {
			t.Messages[i].ID = id
		}
	}
}

// tailCopy keeps what a context needs of a message.
func tailCopy(m Message) Message {
	return Message{ID: m.ID, SessionID: m.SessionID, Seq: m.Seq, ParentSeq: m.ParentSeq, Role: m.Role, Content: m.Content, Name: m.Name,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt, Tokens: m.Tokens, Attachments: m.Attachments}
}

// Clone returns a copy of t that can be changed without changing t.
func (t *Tail) Clone() *Tail {
	c := *t
	c.Messages = slices.Clone(t.Messages)
	return &c
}
