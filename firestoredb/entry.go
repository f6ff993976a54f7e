package firestoredb

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/chatmemory/backend/history"
)

// A tail document entry is one message of a session's tail document, stored as one
// bytes value: a version byte, then its fields in a fixed order, numbers
// as varints and strings length-prefixed. It takes a few bytes more than
// its text (never more than history.StoredBytes), and Firestore parses one
// value per message instead of a dozen nested ones, which is what a large
// tail document's reads and writes pay for. The messages collection keeps each
// message in readable fields; the tail document is derived from it.
// Version 2 adds the message's attachments after its tool calls; a
// version 1 entry (written before) has none.
const entryVersion = 2

var errEntry = errors.New("a malformed window entry")

func encodeEntry(m *history.Message) []byte {
	b := make([]byte, 0, 64+len(m.ID)+len(m.Role)+len(m.Content)+len(m.Name)+len(m.ToolCallID))
	b = append(b, entryVersion)
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	str(m.ID)
	b = binary.AppendVarint(b, int64(m.Seq))
	b = binary.AppendVarint(b, int64(m.ParentSeq))
	str(string(m.Role))
	str(m.Content)
	str(m.Name)
	str(m.ToolCallID)
	b = binary.AppendVarint(b, m.CreatedAt.UnixNano())
	b = binary.AppendVarint(b, int64(m.Tokens))
	b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		str(c.ID)
		str(c.Type)
		str(c.Function.Name)
		str(c.Function.Arguments)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Attachments)))
	for _, p := range m.Attachments {
		str(p.ID)
		str(p.Type)
		str(p.Name)
		str(p.Alt)
		b = binary.AppendVarint(b, p.Size)
		b = binary.AppendVarint(b, int64(p.Width))
		b = binary.AppendVarint(b, int64(p.Height))
		b = binary.AppendVarint(b, int64(p.Tokens))
	}
	return b
}

func decodeEntry(b []byte, sessionID string) (history.Message, error) {
	if len(b) == 0 || b[0] < 1 || b[0] > entryVersion {
		return history.Message{}, errEntry
	}
	r := &entryReader{b: b[1:]}
	m := history.Message{SessionID: sessionID}
	m.ID = r.str()
	m.Seq = int(r.varint())
	m.ParentSeq = int(r.varint())
	m.Role = history.Role(r.str())
	m.Content = r.str()
	m.Name = r.str()
	m.ToolCallID = r.str()
	m.CreatedAt = time.Unix(0, r.varint()).UTC()
	m.Tokens = int(r.varint())
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each call takes at least 4 bytes
		return history.Message{}, errEntry
	}
	for range n {
		c := history.ToolCall{ID: r.str(), Type: r.str()}
		c.Function.Name, c.Function.Arguments = r.str(), r.str()
		m.ToolCalls = append(m.ToolCalls, c)
	}
	if b[0] >= 2 {
		m.Attachments = r.parts()
	}
	if r.err != nil || len(r.b) != 0 {
		return history.Message{}, errEntry
	}
	return m, nil
}

// parts reads an entry's attachments.
func (r *entryReader) parts() []history.Part {
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each part takes at least 8 bytes
		r.err, r.b = errEntry, nil
		return nil
	}
	var out []history.Part
	for range n {
		p := history.Part{ID: r.str(), Type: r.str(), Name: r.str(), Alt: r.str(), Size: r.varint()}
		p.Width, p.Height, p.Tokens = int(r.varint()), int(r.varint()), int(r.varint())
		out = append(out, p)
	}
	return out
}

// entryReader reads an entry's fields in order; the first error sticks.
type entryReader struct {
	b   []byte
	err error
}

func (r *entryReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errEntry, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *entryReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errEntry, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *entryReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errEntry, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}
