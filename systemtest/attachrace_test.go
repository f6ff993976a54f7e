package systemtest_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/chatmemory/backend/attachments"
)

// heldBlobs holds the first object write until released: before its
// bytes are stored, or after (between the object and the record).
type heldBlobs struct {
	attachments.Blobs
	g     *holdFirst
	after bool
}

func (b *heldBlobs) Write(ctx context.Context, key, contentType string, r io.Reader) (int64, error) {
	if !b.after {
		b.g.hold()
	}
	n, err := b.Blobs.Write(ctx, key, contentType, r)
	if b.after {
		b.g.hold()
	}
	return n, err
}

// TestUploadRacingErasure: DELETE /account/data while an upload is in
// flight, held before its object is written (so the erasure's listing of
// the bucket cannot see it) or between the object and its record (so the
// erasure's listing of records cannot see it): the upload is refused
// with a 409 and leaves nothing, neither an object in the bucket nor a
// record or quota in the store. Both stores.
func TestUploadRacingErasure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool
	}{{"before the object", false}, {"between the object and the record", true}} {
		t.Run(tc.name, func(t *testing.T) {
			onBothStores(t, func(t *testing.T, backend string) {
				h := newHarnessOn(t, backend)
				g := newHoldFirst()
				h.blobs = &heldBlobs{Blobs: h.blobs, g: g, after: tc.after}
				h.start()
				alice := h.signUp()
				var r response
				done := make(chan struct{})
				go func() {
					defer close(done)
					r = h.upload(alice.token, "cat.png", "image/png", testPNG(8, 8), "")
				}()
				select {
				case <-g.arrived:
				case <-done:
					t.Fatalf("the upload ended before its object was written: %d %s", r.status, r.body)
				}
				h.do("DELETE", "/account/data", alice.token, nil).want(t, 200)
				close(g.released)
				<-done
				h.idle()
				if keys := h.objects(); len(keys) != 0 {
					t.Errorf("the bucket holds %v", keys)
				}
				h.nothingLeftOf(t, alice)
				var list struct{ Attachments []attachments.Attachment }
				h.do("GET", "/attachments", alice.token, nil).want(t, 200).decode(t, &list)
				if len(list.Attachments) != 0 {
					t.Errorf("records left: %+v", list.Attachments)
				}
				if r.status != 409 || r.errorCode() != "conflict" || !strings.Contains(string(r.body), "erased") {
					t.Errorf("the upload overtaken by the erasure answered %d %s", r.status, r.body)
				}
			})
		})
	}
}
