package systemtest_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/attachments"
)

// TestUploadRefusalsStoreNothing: over HTTP, each bad upload of a user
// with files stored is a 4xx naming the problem, and afterwards the
// bucket, the records and /usage hold the files taken only: too large
// (while streaming, and by Content-Length before), past the quota, empty,
// of a type not taken, and files lying about their type (by name, by
// their part's Content-Type, a PNG signature over bytes that are no PNG,
// a PDF cut short). Both stores.
func TestUploadRefusalsStoreNothing(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.MaxAttachmentBytes, c.AttachmentQuota = 4096, 8000 })
		alice := h.signUp()
		kept := bytes.Repeat([]byte("words "), 500) // 3,000 bytes
		var first attachments.Attachment
		h.upload(alice.token, "notes.txt", "", kept, "").want(t, 201).decode(t, &first)
		taken := []attachments.Attachment{first}
		for _, c := range []struct {
			why, name, ct string
			data          []byte
			status        int
			code, says    string
		}{
			{"too large, found streaming", "big.txt", "", bytes.Repeat([]byte("x"), 5000), 413, "too_large", "file: it is larger than the 4096 bytes"},
			{"too large, by Content-Length", "big.txt", "", bytes.Repeat([]byte("x"), 100_000), 413, "too_large", "file: it is larger than the 4096 bytes"},
			{"a second file, taken", "more.txt", "", kept, 201, "", ""},
			{"past the quota", "most.txt", "", kept, 413, "quota_exceeded", "file: it does not fit in your storage quota"},
			{"empty", "empty.txt", "", nil, 400, "invalid_argument", "file: it is empty"},
			{"wrong type", "x.svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 415, "unsupported_type", "SVG"},
			{"an executable", "setup.exe", "", []byte("MZ\x90\x00"), 415, "unsupported_type", "executable"},
			{"its name lies", "cat.png", "", []byte(testPDF), 415, "unsupported_type", "its name says PNG image"},
			{"its Content-Type lies", "cat", "image/png", []byte("just words"), 415, "unsupported_type", "Content-Type says PNG image"},
			{"a PNG signature over other bytes", "cat.png", "", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{9}, 100)...), 415, "unsupported_type", "not a valid one"},
			{"a PDF cut short", "r.pdf", "", []byte(testPDF[:len(testPDF)-8]), 415, "unsupported_type", "not a complete one"},
		} {
			r := h.upload(alice.token, c.name, c.ct, c.data, "")
			if c.status == 201 {
				var a attachments.Attachment
				r.want(t, 201).decode(t, &a)
				taken = append(taken, a)
				continue
			}
			var e errorResp
			r.decode(t, &e)
			if r.status != c.status || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
				t.Errorf("%s: %d %s %q; want %d %s saying %q", c.why, r.status, e.Error.Code, e.Error.Message, c.status, c.code, c.says)
			}
		}
		var want []string
		var size int64
		for _, a := range taken {
			want, size = append(want, attachments.Key(alice.uid, a.ID)), size+a.Size
		}
		slices.Sort(want)
		if keys := h.objects(); !slices.Equal(keys, want) {
			t.Errorf("the bucket holds %v, want the files taken %v", keys, want)
		}
		var list struct{ Attachments []attachments.Attachment }
		h.do("GET", "/attachments", alice.token, nil).want(t, 200).decode(t, &list)
		var usage struct {
			Attachments struct{ StoredBytes int64 } `json:"attachments"`
		}
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &usage)
		if len(list.Attachments) != len(taken) || usage.Attachments.StoredBytes != size {
			t.Errorf("records %+v, stored bytes %d; want the %d files taken, %d bytes", list.Attachments, usage.Attachments.StoredBytes, len(taken), size)
		}
	})
}
