package firestoredb

import (
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// Earlier versions kept a session's tail elsewhere under context/: first
// in one document, "tail"; then in a ring of pages, "p00" to "p15", with a
// "head" naming the page being filled and the tail's first seq, and the
// summary in "summary". Only the migration (Migrate) reads them: it moves
// each such context into the tail document and deletes them in the same
// commit. The server refuses a session with messages and no tail document
// (errUnmigrated) rather than read its context as empty. A purge still
// deletes these documents by name, for a session purged unmigrated.
const (
	legacyTailDocID    = "tail"
	legacyHeadDocID    = "head"
	legacySummaryDocID = "summary"
	legacyPageSlots    = 16
)

// contextDocIDs are the ids of every document a context may have.
func contextDocIDs() []string {
	return append([]string{tailDocID, DraftDocID, recallMarkerDocID}, legacyDocIDs()...)
}

type legacyHead struct {
	From            int       `firestore:"from"`
	CompactingUntil time.Time `firestore:"compactingUntil"`
}

type legacySummary struct {
	Compaction *compactionDoc `firestore:"compaction"`
}

type legacyPage struct {
	Messages []tailMsgDoc `firestore:"messages"`
}

type legacyTail struct {
	Messages        []tailMsgDoc   `firestore:"messages"`
	Compaction      *compactionDoc `firestore:"compaction"`
	CompactingUntil time.Time      `firestore:"compactingUntil"`
}

// readLegacy reads the tail of st's session from an earlier layout, and
// notes the documents to delete when the tail document replaces them.
func (db *DB) readLegacy(get getAll, st *stored) error {
	c := db.contextOf(st.sessionID)
	var refs []*firestore.DocumentRef
	for _, id := range legacyDocIDs() {
		refs = append(refs, c.Doc(id))
	}
	snaps, err := get(refs)
	if err != nil {
		return err
	}
	for _, snap := range snaps {
		if snap.Exists() {
			st.legacy = append(st.legacy, snap.Ref)
		}
	}
	t, ok := &history.Tail{}, false // none at all: an empty tail
	if head := snaps[0]; head.Exists() {
		var h legacyHead
		if err := dataTo(head, &h); err != nil {
			return err
		}
		t.CompactingUntil = h.CompactingUntil.UTC()
		var sum legacySummary
		if err := dataTo(snaps[1], &sum); err != nil {
			return err
		}
		if sum.Compaction != nil {
			t.Compaction = fromCompactionDoc(history.CompactionID(sum.Compaction.EndSeq), sum.Compaction)
		}
		var msgs []tailMsgDoc
		for _, snap := range snaps[3:] {
			var p legacyPage
			if err := dataTo(snap, &p); err != nil {
				return err
			}
			for _, e := range p.Messages {
				if e.Seq >= h.From {
					msgs = append(msgs, e)
				}
			}
		}
		t.Messages, ok = legacyMessages(msgs, st.sessionID), true
	} else if snaps[2].Exists() {
		var d legacyTail
		if err := dataTo(snaps[2], &d); err != nil {
			return err
		}
		t.CompactingUntil = d.CompactingUntil.UTC()
		if d.Compaction != nil {
			t.Compaction = fromCompactionDoc(history.CompactionID(d.Compaction.EndSeq), d.Compaction)
		}
		t.Messages, ok = legacyMessages(d.Messages, st.sessionID), true
	}
	if ok {
		st.t = t
	}
	return nil
}

// legacyDocIDs are the ids of every document an earlier layout may have.
func legacyDocIDs() []string {
	ids := []string{legacyHeadDocID, legacySummaryDocID, legacyTailDocID}
	for i := range legacyPageSlots {
		ids = append(ids, legacyPageID(i))
	}
	return ids
}

func legacyPageID(slot int) string { return fmt.Sprintf("p%02d", slot) }

// tailMsgDoc is a message as earlier layouts kept it in a context.
type tailMsgDoc struct {
	ID string `firestore:"id"`
	msgFields
}

func legacyMessages(docs []tailMsgDoc, sessionID string) []history.Message {
	out := make([]history.Message, 0, len(docs))
	for i := range docs {
		out = append(out, docs[i].message(docs[i].ID, sessionID))
	}
	slices.SortFunc(out, func(a, b history.Message) int { return a.Seq - b.Seq })
	return out
}

// unmigrated is the error for a session an earlier version stored that
// the migration has not moved yet: internal (the operator runs the
// migration; nothing is wrong with the request), and logged with its cause.
func unmigrated(sessionID string) error {
	return errs.Wrap(errs.EINTERNAL, fmt.Errorf("session %s is stored in an earlier layout: run the migration (go run ./cmd/migrate) before this version serves", sessionID), "internal error")
}
