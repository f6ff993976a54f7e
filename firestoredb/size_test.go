package firestoredb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
)

// TestDocSizeIsFirestores: a document docSize puts at exactly 1 MiB is
// stored; one byte more is refused. So docSize counts as Firestore does.
// (Two pads, because one field value is limited to 1 MiB - 89 bytes.)
func TestDocSizeIsFirestores(t *testing.T) {
	client, _ := emulatortest.Firestore(t)
	ctx := context.Background()
	ref := client.Collection(SessionsCollection).Doc("size-probe").Collection(ContextCollection).Doc(tailDocID)
	type probe struct {
		UserID   string       `firestore:"userId"`
		Page     int          `firestore:"page"`
		Messages []tailMsgDoc `firestore:"messages"`
		Pad1     string       `firestore:"pad1"`
		Pad2     string       `firestore:"pad2"`
	}
	doc := probe{UserID: "alice", Page: 3, Messages: []tailMsgDoc{{ID: "m1", msgFields: msgFields{
		Seq: 1, Role: "assistant", Content: "héllo", CreatedAt: time.Now(), Tokens: 9,
		ToolCalls: []toolCallDoc{{ID: "c1", Type: "function", Name: "f", Arguments: `{"a":1}`}}}}}}
	doc.Pad1 = strings.Repeat("x", 600_000)
	doc.Pad2 = strings.Repeat("y", MaxDocBytes-docSize(ref, doc))
	if n := docSize(ref, doc); n != MaxDocBytes {
		t.Fatalf("padding gave %d bytes", n)
	}
	if _, err := ref.Set(ctx, doc); err != nil {
		t.Fatalf("a document of exactly %d bytes by docSize was refused: %v", MaxDocBytes, err)
	}
	doc.Pad2 += "y"
	_, err := ref.Set(ctx, doc)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a document one byte over the limit by docSize: %v", err)
	}
}

// randomMessage is a message the API accepts: tiny, ordinary, or as large
// and tool-heavy as validation allows.
func randomMessage(r *rand.Rand, seq int) history.Message {
	m := history.Message{ID: history.KeyedMessageID(fmt.Sprint("key", seq), r.IntN(history.MaxBatch)), Seq: seq,
		CreatedAt: time.Now(), Tokens: r.IntN(100000)}
	switch r.IntN(4) {
	case 0: // tiny
		m.Role, m.Content = history.RoleUser, "k"
	case 1: // a tool result
		m.Role, m.ToolCallID, m.Content = history.RoleTool, strings.Repeat("c", 64), strings.Repeat("é", r.IntN(history.MaxContentBytes/2))
	case 2: // the most tool calls, the longest arguments
		m.Role = history.RoleAssistant
		for i := range history.MaxToolCalls {
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: fmt.Sprint("call_", i, strings.Repeat("x", 40)), Type: "function",
				Function: history.FunctionCall{Name: strings.Repeat("f", 64), Arguments: strings.Repeat("a", history.MaxArgumentsBytes)}})
		}
		m.Content = strings.Repeat("b", history.MaxContentBytes)
	default:
		m.Role, m.Content = history.RoleAssistant, strings.Repeat("w", r.IntN(2000))
	}
	return m
}

// TestStoredBytesBoundsEntries: what history counts for a message in a
// tail is never less than what the tail document stores for it (its key and its
// entry), so MaxTailBytes bounds the tail document; and an entry decodes to the
// message it was made from.
func TestStoredBytesBoundsEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		m := randomMessage(r, i)
		m.ParentSeq = i - 1 - r.IntN(3) // -1 for the first; a fork's parent now and then
		m.CreatedAt = m.CreatedAt.UTC()
		e := encodeEntry(&m)
		got := len(seqKey(m.Seq)) + 1 + valueSize(reflect.ValueOf(e))
		if bound := history.StoredBytes(&m); got > bound {
			t.Fatalf("message %d (%s, %d bytes of content, %d tool calls) stores %d bytes, over its bound %d",
				i, m.Role, len(m.Content), len(m.ToolCalls), got, bound)
		}
		back, err := decodeEntry(e, m.SessionID)
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("message %d: decoded %+v (%v), want %+v", i, back, err, m)
		}
		if _, err := decodeEntry(e[:len(e)-1], m.SessionID); err == nil {
			t.Fatalf("message %d: a truncated entry decoded", i)
		}
	}
}

// TestTailDocStaysBounded: over thousands of appends of tiny, ordinary and
// maximal tool-heavy messages, with the tail as large as history lets it
// be and a switch to another branch now and then, the tail document
// stays under its bound, an append sends little more than its own
// messages, and the document always holds exactly the tail.
func TestTailDocStaysBounded(t *testing.T) {
	client, _ := emulatortest.Firestore(t) // names documents; nothing is written
	ref := client.Collection(SessionsCollection).Doc("s").Collection(ContextCollection).Doc(tailDocID)
	r := rand.New(rand.NewPCG(3, 4))
	var doc *tailDoc
	tail := &history.Tail{}
	largest, seq := 0, 0
	for step := range 3000 {
		// An append of one to three messages; the tail keeps the newest
		// messages up to MaxTailBytes, as history's does at worst. Now and
		// then a switch keeps only a prefix, and a summary comes in.
		t2 := tail.Clone()
		if step%97 == 96 && len(t2.Messages) > 2 {
			t2.Messages = t2.Messages[:len(t2.Messages)/2]
		}
		if step%50 == 49 && len(t2.Messages) > 0 {
			t2.Compaction = &history.Compaction{ID: history.CompactionID(t2.Messages[0].Seq - 1), EndSeq: t2.Messages[0].Seq - 1,
				Summary: strings.Repeat("s", 8000), CreatedAt: time.Now()}
		}
		var added []history.Message
		for range 1 + r.IntN(3) {
			m := randomMessage(r, seq)
			seq++
			added = append(added, m)
			t2.Messages = append(t2.Messages, m)
		}
		total := 0
		for i := range t2.Messages {
			total += history.StoredBytes(&t2.Messages[i])
		}
		for len(t2.Messages) > 1 && total > history.MaxTailBytes {
			total -= history.StoredBytes(&t2.Messages[0])
			t2.Messages = t2.Messages[1:]
		}
		var old *history.Tail
		summaryEnd := -1
		if doc != nil {
			old, summaryEnd = tail, compactionEnd(tail.Compaction)
		}
		p, err := planTail("alice", old, summaryEnd, t2, seq)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if p.Doc == nil && !slices.ContainsFunc(p.Updates, func(u firestore.Update) bool { return len(u.FieldPath) == 1 && u.FieldPath[0] == "messages" }) {
			sent, own := 0, 0
			for _, u := range p.Updates {
				if u.Value != firestore.Delete && len(u.FieldPath) == 2 {
					sent += valueSize(reflect.ValueOf(u.Value))
				}
			}
			for _, m := range added {
				own += len(encodeEntry(&m))
			}
			if sent > own {
				t.Fatalf("step %d: sent %d bytes of messages for %d bytes of new ones", step, sent, own)
			}
		}
		doc = p.apply(doc)
		n := docSize(ref, doc)
		largest = max(largest, n)
		if n > maxTailDocBytes {
			t.Fatalf("step %d: a window of %d bytes", step, n)
		}
		got, err := doc.tailOf("s")
		if err != nil {
			t.Fatal(err)
		}
		var gotSeqs, want []int
		for _, m := range got.Messages {
			gotSeqs = append(gotSeqs, m.Seq)
		}
		for _, m := range t2.Messages {
			want = append(want, m.Seq)
		}
		if !slices.Equal(gotSeqs, want) || compactionEnd(got.Compaction) != compactionEnd(t2.Compaction) {
			t.Fatalf("step %d: the window holds %v, the tail is %v", step, gotSeqs, want)
		}
		tail = t2
	}
	t.Logf("largest window: %d bytes (%.0f%% of the limit)", largest, 100*float64(largest)/MaxDocBytes)
}
