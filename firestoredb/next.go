package firestoredb

import (
	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// A turn writes its tail document once, in its reply's commit. The
// commit that claims the turn (before the model) writes the session
// document anyway, for the answering lease; it carries the user's message
// there too, as the session document's "tailNext": the message as a tail document
// entry and the seq the tail starts from once it is in. Whoever reads the
// session and its tail document reads the tail as the tail document's messages from that
// seq on plus that message, as long as the message still continues the
// tail document (the newest of it, on the session's active branch); the reply's
// commit then writes both messages to the tail document and removes tailNext from
// the session, which it writes anyway. So a turn writes the tail document once
// instead of twice, and a turn that never got its reply (its instance died)
// leaves its message in the tail all the same, where the next turn's
// commit moves it into the tail document.
//
// Only a claim's plain append is carried so: one new message, the one the
// session's answering lease names, after the tail document's newest, the summary
// unchanged, the session document there already, no
// earlier tailNext still in use, and a message of at most maxNextBytes (the
// session document is what lists read). Anything else writes the tail document.
// Any other write of the tail document plans from the tail document as stored and leaves
// tailNext behind; once the tail document holds its message, readers pass it by.

// tailNextDoc is a session document's tailNext.
type tailNextDoc struct {
	From  int    `firestore:"from"`  // seq of the tail's first message
	Entry []byte `firestore:"entry"` // the newest message, as a tail document entry
}

// maxNextBytes bounds the message a session document carries.
const maxNextBytes = 16 << 10

const tailNextField = "tailNext"

// deferTail returns the tailNext that stores tail t of session s, written
// with created as its only new message, in the session document instead
// of the tail document, when a read would give t back exactly; nil if the tail document
// must be written.
func deferTail(st *stored, s *sessions.Session, t *history.Tail, created []history.Message) *tailNextDoc {
	if !st.exists || st.tailDoc == nil || st.nextApplied || len(created) != 1 || len(t.Messages) == 0 {
		return nil
	}
	m := &created[0]
	if s.Bookkeeping.Answering == nil || s.Bookkeeping.Answering.Seq != m.Seq {
		return nil // only a message awaiting its reply: the reply's commit writes the tail document
	}
	if last := &t.Messages[len(t.Messages)-1]; last.ID != m.ID || last.Seq != m.Seq {
		return nil
	}
	e := encodeEntry(m)
	if len(e) > maxNextBytes {
		return nil
	}
	wt := st.docTail
	if compactionEnd(t.Compaction) != compactionEnd(wt.Compaction) || !t.CompactingUntil.Equal(wt.CompactingUntil) ||
		!onlyAppended(wt.Messages, t.Messages) {
		return nil
	}
	n := &tailNextDoc{From: t.Messages[0].Seq, Entry: e}
	got, ok := nextOf(n, wt, s)
	if !ok || len(got.Messages) != len(t.Messages) {
		return nil
	}
	for i := range got.Messages {
		if got.Messages[i].ID != t.Messages[i].ID || got.Messages[i].Seq != t.Messages[i].Seq {
			return nil
		}
	}
	return n
}

// nextOf returns the message n carries if it continues the tail document's tail
// wt in session s, and the tail it makes.
func nextOf(n *tailNextDoc, wt *history.Tail, s *sessions.Session) (*history.Tail, bool) {
	if n == nil {
		return nil, false
	}
	m, err := decodeEntry(n.Entry, s.ID)
	if err != nil || m.Seq >= s.NextSeq || !s.Path().Contains(m.Seq) {
		return nil, false
	}
	if k := len(wt.Messages); k > 0 && (m.Seq <= wt.Messages[k-1].Seq || m.ParentSeq != wt.Messages[k-1].Seq) {
		return nil, false
	}
	t := &history.Tail{Compaction: wt.Compaction, CompactingUntil: wt.CompactingUntil}
	for _, old := range wt.Messages {
		if old.Seq >= n.From {
			t.Messages = append(t.Messages, old)
		}
	}
	t.Messages = append(t.Messages, m)
	return t, true
}

// nextUpdate is the session document's update that sets its tailNext to
// n, or removes it (nil).
func nextUpdate(n *tailNextDoc) firestore.Update {
	if n == nil {
		return firestore.Update{FieldPath: firestore.FieldPath{tailNextField}, Value: firestore.Delete}
	}
	return firestore.Update{FieldPath: firestore.FieldPath{tailNextField}, Value: n}
}
