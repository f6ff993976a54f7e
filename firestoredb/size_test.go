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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// TestDocSizeIsFirestores: a document docSize puts at exactly 1 MiB is
// stored; one byte more is refused. So docSize counts as Firestore does.
// (Two pads, because one field value is limited to 1 MiB - 89 bytes.)
func TestDocSizeIsFirestores(t *testing.T) {
	client, _ := emulatortest.Firestore(t)
	ctx := context.Background()
	ref := client.Collection(SessionsCollection).Doc("size-probe").Collection(ContextCollection).Doc(pageID(3))
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
	m := history.Message{ID: history.KeyDocID(fmt.Sprint("key", seq), r.IntN(history.MaxBatch)), Seq: seq,
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
// tail is never less than what a page stores for it, so MaxTailBytes
// bounds the pages a tail spans.
func TestStoredBytesBoundsEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		m := randomMessage(r, i)
		got := valueSize(reflect.ValueOf(tailMsgDoc{ID: m.ID, msgFields: toMsgFields(&m)}))
		if bound := history.StoredBytes(&m); got > bound {
			t.Fatalf("message %d (%s, %d bytes of content, %d tool calls) stores %d bytes, over its bound %d",
				i, m.Role, len(m.Content), len(m.ToolCalls), got, bound)
		}
	}
}

// TestPagesStayBounded: over thousands of appends of tiny, ordinary and
// maximal tool-heavy messages, with the tail as large as history lets it
// be, every page stays under 90% of Firestore's limit, no page overwrites a
// live one, an append writes at most the page being filled plus its own
// messages, and the pages always hold exactly the tail.
func TestPagesStayBounded(t *testing.T) {
	client, _ := emulatortest.Firestore(t) // names documents; nothing is written
	c := client.Collection(SessionsCollection).Doc("s").Collection(ContextCollection)
	r := rand.New(rand.NewPCG(3, 4))
	s := &sessions.Session{ID: "s", UserID: "alice"}
	st := &stored{sessionID: "s", exists: true, summaryEnd: -1, t: &history.Tail{}, s: s}
	largest, seq := 0, 0
	for step := range 3000 {
		// An append of one to three messages; the tail keeps the newest
		// messages up to MaxTailBytes, as history's does at worst.
		t2 := st.t.Clone()
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
		s.NextSeq = seq
		l, err := layout(c, st, s, t2)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		written, own := 0, 0
		for slot, p := range l.set {
			n := pageSize(c, slot, p)
			written += n
			largest = max(largest, n)
			if n > MaxDocBytes*9/10 {
				t.Fatalf("step %d: page of %d bytes", step, n)
			}
			st.pages[slot] = p
		}
		for _, m := range added {
			own += valueSize(reflect.ValueOf(tailMsgDoc{ID: m.ID, msgFields: toMsgFields(&m)}))
		}
		if written > PageBytes+own+200 {
			t.Fatalf("step %d: wrote %d bytes of pages for %d bytes of messages", step, written, own)
		}
		for _, slot := range l.del {
			st.pages[slot] = nil
		}
		st.head, st.headTime = l.head, time.Now()
		// Read back as decodeStored does.
		var got []int
		for _, p := range st.pages {
			for _, e := range p.messagesOrNil() {
				if e.Seq >= l.head.From {
					got = append(got, e.Seq)
				}
			}
		}
		slices.Sort(got)
		var want []int
		for _, m := range t2.Messages {
			want = append(want, m.Seq)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: pages hold %v, the tail is %v", step, got, want)
		}
		st.t = t2
	}
	t.Logf("largest page written: %d bytes (%.0f%% of the limit)", largest, 100*float64(largest)/MaxDocBytes)
}

func (p *pageDoc) messagesOrNil() []tailMsgDoc {
	if p == nil {
		return nil
	}
	return p.Messages
}

// TestLegacyContextMoves: a session whose context is still in the single
// document of earlier versions is read from it, and its next append moves
// it into pages and deletes it.
func TestLegacyContextMoves(t *testing.T) {
	client, _ := emulatortest.Firestore(t)
	ctx := context.Background()
	db := New(client)
	ss := sessions.NewService(db, "gpt-4o-mini")
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	hs := history.NewService(db, tok)
	s, err := ss.Create(ctx, "alice", sessions.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two", "three"} {
		if _, err := hs.Append(ctx, s, "", history.Draft{Role: history.RoleUser, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	_, tail, err := db.ReadTail(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite it as an earlier version stored it.
	legacy := map[string]any{"userId": "alice", "compactingUntil": time.Time{}}
	var msgs []tailMsgDoc
	for i := range tail.Messages {
		msgs = append(msgs, tailMsgDoc{ID: tail.Messages[i].ID, msgFields: toMsgFields(&tail.Messages[i])})
	}
	legacy["messages"] = msgs
	for _, id := range contextDocIDs() {
		if _, err := db.contextOf(s.ID).Doc(id).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.contextOf(s.ID).Doc(legacyTailDocID).Set(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	_, got, err := db.ReadTail(ctx, s.ID)
	if err != nil || len(got.Messages) != 3 || got.Messages[2].Content != "three" {
		t.Fatalf("legacy context read: %+v, %v", got, err)
	}
	s, _ = ss.Get(ctx, "alice", s.ID)
	if _, err := hs.Append(ctx, s, "", history.Draft{Role: history.RoleUser, Content: "four"}); err != nil {
		t.Fatal(err)
	}
	_, got, err = db.ReadTail(ctx, s.ID)
	if err != nil || len(got.Messages) != 4 || got.Messages[3].Content != "four" {
		t.Fatalf("after the move: %+v, %v", got, err)
	}
	if snap, err := db.contextOf(s.ID).Doc(legacyTailDocID).Get(ctx); err == nil && snap.Exists() {
		t.Fatal("the legacy document is still there")
	}
	if snap, err := db.contextOf(s.ID).Doc(headDocID).Get(ctx); err != nil || !snap.Exists() {
		t.Fatalf("no head after the move: %v", err)
	}
}
