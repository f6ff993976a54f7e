package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/kernel/errs"
)

// testAttachmentRecords: a record reads back as written, to its owner
// only; listing is the owner's, oldest first; deleting takes its size off
// the stored bytes, once.
func testAttachmentRecords(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	at := Epoch
	mk := func(id, user string, size int64) *attachments.Attachment {
		at = at.Add(time.Second)
		return &attachments.Attachment{ID: id, UserID: user, Type: "image/png", Name: id + ".png", Alt: "a cat",
			Size: size, Width: 3, Height: 2, SHA256: "ab", CreatedAt: at}
	}
	gens := map[string]string{}
	for _, a := range []*attachments.Attachment{mk("b1", "alice", 10), mk("a2", "alice", 20), mk("c3", "bob", 5)} {
		gens[a.UserID] = Must[string](t)(db.ReserveAttachment(ctx, a.UserID, attachments.Reservation{Bytes: a.Size + 7, Quota: 100, At: Epoch}))
		ok(t, db.CreateAttachment(ctx, a, gens[a.UserID], 7))
	}
	WantCode(t, db.CreateAttachment(ctx, mk("b1", "alice", 1), gens["alice"], 0), errs.ECONFLICT)
	if n := Must[int64](t)(db.StoredBytes(ctx, "alice")); n != 30 {
		t.Fatalf("alice's stored bytes = %d, want 30 (what each upload did not use given back with its record)", n)
	}
	got := Must[*attachments.Attachment](t)(db.GetAttachment(ctx, "alice", "b1"))
	if got.Name != "b1.png" || got.Alt != "a cat" || got.Size != 10 || got.Width != 3 || got.Height != 2 || got.UserID != "alice" || !got.CreatedAt.Equal(Epoch.Add(time.Second)) {
		t.Fatalf("read back %+v", got)
	}
	_, err := db.GetAttachment(ctx, "bob", "b1")
	WantCode(t, err, errs.ENOTFOUND)
	_, err = db.GetAttachment(ctx, "alice", "nope")
	WantCode(t, err, errs.ENOTFOUND)
	list := Must[[]attachments.Attachment](t)(db.ListAttachments(ctx, "alice"))
	if len(list) != 2 || list[0].ID != "b1" || list[1].ID != "a2" {
		t.Fatalf("alice's list = %+v, want b1 then a2", list)
	}
	unreferenced := func(before time.Time, limit int) []string {
		var ids []string
		for _, a := range Must[[]attachments.Attachment](t)(db.UnreferencedAttachments(ctx, before, limit)) {
			ids = append(ids, a.ID)
		}
		return ids
	}
	if got := unreferenced(Epoch.Add(time.Minute), 10); !slices.Equal(got, []string{"b1", "a2", "c3"}) {
		t.Fatalf("unreferenced = %v, want all three, oldest first", got)
	}
	if got := unreferenced(Epoch.Add(3*time.Second), 1); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("unreferenced before the third's upload, one = %v", got)
	}
	WantCode(t, db.ReferenceAttachment(ctx, "alice", "c3", "s1"), errs.ENOTFOUND) // bob's
	WantCode(t, db.ReferenceAttachment(ctx, "alice", "nope", "s1"), errs.ENOTFOUND)
	ok(t, db.ReferenceAttachment(ctx, "alice", "a2", "s1"))
	ok(t, db.ReferenceAttachment(ctx, "alice", "a2", "s1")) // again: no change
	if got := Must[*attachments.Attachment](t)(db.GetAttachment(ctx, "alice", "a2")); !got.Referenced || got.SessionID != "s1" || got.Name != "a2.png" {
		t.Fatalf("referenced record %+v", got)
	}
	if got := unreferenced(Epoch.Add(time.Minute), 10); !slices.Equal(got, []string{"b1", "c3"}) {
		t.Fatalf("unreferenced after a2 was named = %v", got)
	}
	if ok := Must[bool](t)(db.DeleteAttachment(ctx, "bob", "b1")); ok {
		t.Fatal("bob deleted alice's attachment")
	}
	if ok := Must[bool](t)(db.DeleteAttachment(ctx, "alice", "b1")); !ok {
		t.Fatal("alice could not delete her attachment")
	}
	if ok := Must[bool](t)(db.DeleteAttachment(ctx, "alice", "b1")); ok {
		t.Fatal("deleted twice")
	}
	if n := Must[int64](t)(db.StoredBytes(ctx, "alice")); n != 20 {
		t.Fatalf("alice's stored bytes = %d, want 20", n)
	}
	ok(t, db.DeleteAttachmentQuota(ctx, "bob"))
	if n := Must[int64](t)(db.StoredBytes(ctx, "bob")); n != 0 {
		t.Fatalf("bob's stored bytes after erasure = %d", n)
	}
}

// testAttachmentQuota: reservations hold the quota and the minute's
// uploads, also when 20 run at once; releases give bytes back, never
// below zero.
func testAttachmentQuota(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	r := attachments.Reservation{Bytes: 30, Quota: 100, At: Epoch, PerMinute: 3}
	reserve := func(r attachments.Reservation) (string, error) { return db.ReserveAttachment(ctx, "alice", r) }
	gen := Must[string](t)(reserve(r))
	for range 2 {
		if g := Must[string](t)(reserve(r)); g != gen || g == "" {
			t.Fatalf("reservations of one quota record answered generations %q and %q", gen, g)
		}
	}
	_, err := reserve(r)
	WantCode(t, err, errs.ERATELIMITED)
	r.At = Epoch.Add(time.Minute)
	_, err = reserve(r)
	WantCode(t, err, errs.EQUOTA) // 90 + 30 > 100
	r.Bytes = 10
	Must[string](t)(reserve(r))
	ok(t, db.ReleaseAttachment(ctx, "alice", gen, 60))
	if n := Must[int64](t)(db.StoredBytes(ctx, "alice")); n != 40 {
		t.Fatalf("stored bytes = %d, want 40", n)
	}
	ok(t, db.ReleaseAttachment(ctx, "alice", gen, 1000))
	if n := Must[int64](t)(db.StoredBytes(ctx, "alice")); n != 0 {
		t.Fatalf("stored bytes = %d, want 0", n)
	}

	const uploads = 20
	var wg sync.WaitGroup
	results := make(chan error, uploads)
	for range uploads {
		wg.Go(func() {
			_, err := db.ReserveAttachment(ctx, "carol", attachments.Reservation{Bytes: 10, Quota: 75, At: Epoch})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	admitted := 0
	for err := range results {
		if err == nil {
			admitted++
		} else if errs.CodeOf(err) != errs.EQUOTA {
			t.Fatalf("a concurrent reservation failed with %v", err)
		}
	}
	if n := Must[int64](t)(db.StoredBytes(ctx, "carol")); admitted != 7 || n != 70 {
		t.Fatalf("%d of %d concurrent reservations admitted, %d bytes stored; want 7 and 70", admitted, uploads, n)
	}
}

// testAttachmentFence: an erasure (which deletes the quota record first)
// fences out uploads that reserved before it: their record is refused,
// their release changes and creates nothing, also once a later upload
// made the record anew, whose generation is another.
func testAttachmentFence(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	r := attachments.Reservation{Bytes: 10, Quota: 100, At: Epoch}
	a := &attachments.Attachment{ID: "f1", UserID: "dora", Type: "image/png", Name: "f1.png", Size: 8, SHA256: "ab", CreatedAt: Epoch}
	old := Must[string](t)(db.ReserveAttachment(ctx, "dora", r))
	ok(t, db.DeleteAttachmentQuota(ctx, "dora")) // the erasure begins
	WantCode(t, db.CreateAttachment(ctx, a, old, 2), errs.ECONFLICT)
	ok(t, db.ReleaseAttachment(ctx, "dora", old, 10))
	if n := Must[int64](t)(db.StoredBytes(ctx, "dora")); n != 0 {
		t.Fatalf("a fenced release left %d stored bytes", n)
	}
	next := Must[string](t)(db.ReserveAttachment(ctx, "dora", r)) // a new upload, after the erasure
	if next == old {
		t.Fatalf("the quota record made anew has the erased one's generation %q", old)
	}
	WantCode(t, db.CreateAttachment(ctx, a, old, 2), errs.ECONFLICT)
	ok(t, db.ReleaseAttachment(ctx, "dora", old, 10))
	if all := Must[[]attachments.Attachment](t)(db.ListAttachments(ctx, "dora")); len(all) != 0 {
		t.Fatalf("fenced uploads left records %+v", all)
	}
	if n := Must[int64](t)(db.StoredBytes(ctx, "dora")); n != 10 {
		t.Fatalf("stored bytes = %d, want the new upload's 10 (the fenced release took nothing)", n)
	}
	ok(t, db.CreateAttachment(ctx, a, next, 2))
	if n := Must[int64](t)(db.StoredBytes(ctx, "dora")); n != 8 {
		t.Fatalf("stored bytes = %d, want the new file's 8", n)
	}
}

func ok(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
