package firestoredb

import (
	"reflect"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
)

// TestEntryAttachments: a tail document entry keeps a message's attachments; an
// entry written before them (version 1) reads as a message without.
func TestEntryAttachments(t *testing.T) {
	m := history.Message{ID: "m1", SessionID: "s", Seq: 4, ParentSeq: 3, Role: history.RoleUser, Content: "look",
		CreatedAt: time.Unix(1700000000, 5).UTC(), Tokens: 800, Attachments: []history.Part{
			{ID: "a1", Type: "image/png", Name: "cat.png", Alt: "a cat", Size: 1234, Width: 1024, Height: 768, Tokens: 765},
			{ID: "a2", Type: "application/pdf", Name: "r.pdf", Size: 99, Tokens: 12}}}
	back, err := decodeEntry(encodeEntry(&m), "s")
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("read back %+v, %v; want %+v", back, err, m)
	}
	plain := m
	plain.Attachments = nil
	v1 := encodeEntry(&plain)
	v1 = v1[:len(v1)-1] // no attachment count
	v1[0] = 1
	if back, err := decodeEntry(v1, "s"); err != nil || back.Attachments != nil || back.Content != "look" {
		t.Fatalf("a version 1 entry read back %+v, %v", back, err)
	}
	e := encodeEntry(&m)
	if _, err := decodeEntry(e[:len(e)-3], "s"); err == nil {
		t.Fatal("a cut entry was read")
	}
}
