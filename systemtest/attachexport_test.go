package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/chatmemory/backend/attachments"
)

// noisePNG is a w×h PNG of random pixels: it does not compress, so it
// takes many of the blob stores' chunks.
func noisePNG(w, h int) []byte {
	m := image.NewGray(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.UintN(256))
	}
	var b bytes.Buffer
	png.Encode(&b, m)
	return b.Bytes()
}

// exportedFile is an attachment as GET /account/export holds it.
type exportedFile struct {
	attachments.Attachment
	URL  string  `json:"url"`
	Data *[]byte `json:"data"` // base64 in the JSON; nil: null
}

// TestExportHoldsFiles: GET /account/export holds each of the caller's
// files with its record and its bytes (base64), byte for byte, a PNG of
// several chunks included; a record whose object is gone is exported
// with null data; another user's files are not in it. Both stores.
func TestExportHoldsFiles(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice, bob := h.signUp(), h.signUp()
		pic := noisePNG(600, 500)
		var img, doc, gone, bobs attachments.Attachment
		h.upload(alice.token, "cat.png", "image/png", pic, "a grey cat").want(t, 201).decode(t, &img)
		h.upload(alice.token, "report.pdf", "", []byte(testPDF), "").want(t, 201).decode(t, &doc)
		h.upload(alice.token, "lost.txt", "", []byte("lost words"), "").want(t, 201).decode(t, &gone)
		h.upload(bob.token, "bob.txt", "", []byte("bob's words"), "").want(t, 201).decode(t, &bobs)
		if err := h.blobs.Delete(context.Background(), attachments.Key(alice.uid, gone.ID)); err != nil {
			t.Fatal(err)
		}

		var export struct {
			Attachments []exportedFile `json:"attachments"`
		}
		r := h.do("GET", "/account/export", alice.token, nil).want(t, 200)
		if err := json.Unmarshal(r.body, &export); err != nil {
			t.Fatalf("the export is not JSON: %v", err)
		}
		byID := map[string]exportedFile{}
		for _, f := range export.Attachments {
			byID[f.ID] = f
		}
		want := map[string][]byte{img.ID: pic, doc.ID: []byte(testPDF)}
		for id, data := range want {
			f, ok := byID[id]
			if !ok || f.Data == nil || !bytes.Equal(*f.Data, data) || f.URL != "/attachments/"+id || f.Size != int64(len(data)) {
				t.Fatalf("the export's %s: found %v, %d bytes of data, url %q; want the %d bytes uploaded", id, ok, lenOf(f.Data), f.URL, len(data))
			}
		}
		if f := byID[img.ID]; f.Type != "image/png" || f.Width != 600 || f.Height != 500 || f.Alt != "a grey cat" || f.SHA256 != img.SHA256 {
			t.Fatalf("the image's record in the export: %+v", f.Attachment)
		}
		if f, ok := byID[gone.ID]; !ok || f.Data != nil || f.Name != "lost.txt" {
			t.Fatalf("the record whose object is gone: found %v, %d bytes of data", ok, lenOf(f.Data))
		}
		if _, ok := byID[bobs.ID]; ok || len(export.Attachments) != 3 {
			t.Fatalf("alice's export holds %d files (bob's among them: %v)", len(export.Attachments), ok)
		}
	})
}

func lenOf(b *[]byte) int {
	if b == nil {
		return -1
	}
	return len(*b)
}
