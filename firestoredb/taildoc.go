package firestoredb

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// A session's tail (history.Tail) is one document,
// chat_sessions/{sid}/context/tail document: where the tail starts, the summary
// in use, the compaction lease, and the tail's messages as a map keyed by
// seq. A turn reads it with the session in the same batched read, whatever
// the length of the session: one document, always there once the session
// has a message, at a fixed id.
//
// A write changes only what changed, field by field: an append sends its
// own messages and deletes the keys of those that left the tail (its bytes
// on the wire grow with the message, never with the tail document), and the
// summary is sent only when it changed. A tail that is not the old one
// with messages dropped from its front and added at its end (a switch to
// another branch, an edit) replaces the map whole. The document holds at
// most history.MaxTailBytes of messages plus the summary, well under
// Firestore's 1 MiB, and its large fields are exempt from indexing.
const (
	ContextCollection     = "context"
	CompactionsCollection = "compactions"
	tailDocID             = "window"
	DraftDocID            = "draft" // the partial text of the session's streaming reply, which clients follow
)

// tailDoc is chat_sessions/{sid}/context/tail document.
type tailDoc struct {
	UserID          string            `firestore:"userId"`
	From            int               `firestore:"from"` // seq of the tail's first message
	CompactingUntil time.Time         `firestore:"compactingUntil"`
	Compaction      *compactionDoc    `firestore:"compaction"`
	Messages        map[string][]byte `firestore:"messages"` // seqKey → entry (see entry.go)
}

// tailOf decodes a tail document's tail, oldest message first.
func (d *tailDoc) tailOf(sessionID string) (*history.Tail, error) {
	t := &history.Tail{CompactingUntil: d.CompactingUntil.UTC()}
	if d.Compaction != nil {
		t.Compaction = fromCompactionDoc(history.CompactionID(d.Compaction.EndSeq), d.Compaction)
	}
	for k, e := range d.Messages {
		m, err := decodeEntry(e, sessionID)
		if seq, ok := keySeq(k); err != nil || !ok || seq != m.Seq {
			return nil, errs.Errorf(errs.EINTERNAL, "context of session %s: entry %q does not hold its message", sessionID, k)
		}
		t.Messages = append(t.Messages, m)
	}
	slices.SortFunc(t.Messages, func(a, b history.Message) int { return a.Seq - b.Seq })
	return t, nil
}

func keySeq(k string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(k, "s"))
	return n, err == nil && strings.HasPrefix(k, "s")
}

// tailPlan is how to write a tail: the whole document (Doc) when there
// is none yet, else the field updates of Updates.
type tailPlan struct {
	Doc     *tailDoc
	Updates []firestore.Update
}

// maxTailDocBytes bounds what a tail document may hold: a tail at its cap
// plus its largest message and a summary stay far below it.
const maxTailDocBytes = MaxDocBytes * 3 / 5

// MaxDocBytes is Firestore's limit on the size of one document.
const MaxDocBytes = 1 << 20

// planTail plans writing tail t of user userID over old, the tail the
// document holds (nil: there is no document), with summaryEnd the EndSeq
// of the summary it holds (-1 for none) and next the seq the tail would
// start at if it were empty.
func planTail(userID string, old *history.Tail, summaryEnd int, t *history.Tail, next int) (*tailPlan, error) {
	from := next
	if len(t.Messages) > 0 {
		from = t.Messages[0].Seq
	}
	size := 0
	for i := range t.Messages {
		size += history.StoredBytes(&t.Messages[i])
	}
	if t.Compaction != nil {
		size += len(t.Compaction.Summary) + 512
	}
	if size > maxTailDocBytes {
		return nil, errs.Errorf(errs.EINTERNAL, "a context of %d bytes", size)
	}
	if old == nil {
		return &tailPlan{Doc: &tailDoc{UserID: userID, From: from, CompactingUntil: t.CompactingUntil,
			Compaction: toCompactionDoc(userID, t.Compaction), Messages: entries(t.Messages)}}, nil
	}
	u := []firestore.Update{
		{FieldPath: firestore.FieldPath{"from"}, Value: from},
		{FieldPath: firestore.FieldPath{"compactingUntil"}, Value: t.CompactingUntil},
	}
	if compactionEnd(t.Compaction) != summaryEnd {
		u = append(u, firestore.Update{FieldPath: firestore.FieldPath{"compaction"}, Value: toCompactionDoc(userID, t.Compaction)})
	}
	if !onlyAppended(old.Messages, t.Messages) {
		return &tailPlan{Updates: append(u, firestore.Update{FieldPath: firestore.FieldPath{"messages"}, Value: entries(t.Messages)})}, nil
	}
	last := -1
	for _, m := range old.Messages {
		last = max(last, m.Seq)
		if m.Seq < from || len(t.Messages) == 0 {
			u = append(u, firestore.Update{FieldPath: firestore.FieldPath{"messages", seqKey(m.Seq)}, Value: firestore.Delete})
		}
	}
	for i := range t.Messages {
		if m := &t.Messages[i]; m.Seq > last {
			u = append(u, firestore.Update{FieldPath: firestore.FieldPath{"messages", seqKey(m.Seq)}, Value: encodeEntry(m)})
		}
	}
	return &tailPlan{Updates: u}, nil
}

func entries(msgs []history.Message) map[string][]byte {
	out := make(map[string][]byte, len(msgs))
	for i := range msgs {
		out[seqKey(msgs[i].Seq)] = encodeEntry(&msgs[i])
	}
	return out
}

// seqKey is a message's key in tailDoc.Messages: a plain identifier,
// so that field paths to it need no quoting.
func seqKey(seq int) string { return fmt.Sprintf("s%09d", seq) }

// apply returns d as the plan leaves it (what Firestore stores after it).
func (p *tailPlan) apply(d *tailDoc) *tailDoc {
	if p.Doc != nil {
		return p.Doc
	}
	n := *d
	n.Messages = maps.Clone(d.Messages)
	for _, u := range p.Updates {
		switch {
		case len(u.FieldPath) == 2:
			if u.Value == firestore.Delete {
				delete(n.Messages, u.FieldPath[1])
			} else {
				n.Messages[u.FieldPath[1]] = u.Value.([]byte)
			}
		case u.FieldPath[0] == "from":
			n.From = u.Value.(int)
		case u.FieldPath[0] == "compactingUntil":
			n.CompactingUntil = u.Value.(time.Time)
		case u.FieldPath[0] == "compaction":
			n.Compaction = u.Value.(*compactionDoc)
		case u.FieldPath[0] == "messages":
			n.Messages = u.Value.(map[string][]byte)
		}
	}
	return &n
}

func compactionEnd(c *history.Compaction) int {
	if c == nil {
		return -1
	}
	return c.EndSeq
}

// onlyAppended reports whether the new tail is the old one with messages
// dropped from its front and appended at its end: every old message from
// the new tail's first on is kept as it was, and every new one comes after
// the old ones (a switch to another branch keeps a prefix and drops the
// rest, which is not an append).
func onlyAppended(old, cur []history.Message) bool {
	if len(cur) == 0 {
		return true
	}
	ids := make(map[int]string, len(cur))
	for _, m := range cur {
		ids[m.Seq] = m.ID
	}
	last := -1
	for _, m := range old {
		last = m.Seq
		if m.Seq < cur[0].Seq {
			continue
		}
		if id, ok := ids[m.Seq]; !ok || id != m.ID {
			return false
		}
		delete(ids, m.Seq)
	}
	for seq := range ids { // the messages not in the old tail
		if seq <= last {
			return false
		}
	}
	return true
}
