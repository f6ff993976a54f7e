package attachments_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
)

// Files of every type taken, made here.
var (
	pngFile  = encode(func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }, 3, 2)
	jpegFile = encode(func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }, 40, 30)
	gifFile  = encode(func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) }, 5, 7)
	// A 1x1 lossless WebP.
	webpFile = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	pdfFile  = []byte(MinimalPDF("Quarterly revenue grew"))
)

func encode(enc func(*bytes.Buffer, image.Image) error, w, h int) []byte {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	m.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := enc(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// MinimalPDF is a one-page PDF showing text.
func MinimalPDF(text string) string {
	return "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
		"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 100]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>endobj\n" +
		"4 0 obj<</Length 44>>stream\nBT /F1 12 Tf 10 50 Td (" + text + ") Tj ET\nendstream endobj\n" +
		"5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
}

type env struct {
	svc   *attachments.Service
	db    *inprocdb.DB
	blobs *inprocdb.Blobs
}

func newEnv(max, quota int64, perMinute int) *env {
	db, blobs := inprocdb.New(), inprocdb.NewBlobs()
	now := time.Date(2026, 1, 15, 9, 0, 30, 0, time.UTC)
	return &env{db: db, blobs: blobs, svc: &attachments.Service{Store: db, Blobs: blobs, MaxBytes: max, Quota: quota, PerMinute: perMinute,
		Now: func() time.Time { return now }}}
}

func (e *env) upload(name, declared string, data []byte) (*attachments.Attachment, error) {
	return e.svc.Upload(context.Background(), "alice", attachments.Upload{Name: name, Declared: declared, Body: bytes.NewReader(data), SizeHint: int64(len(data))})
}

// nothingStored fails unless alice has no object, no record and no
// stored bytes.
func (e *env) nothingStored(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	keys, _ := e.blobs.List(ctx, "users/")
	recs, _ := e.db.ListAttachments(ctx, "alice")
	used, _ := e.db.StoredBytes(ctx, "alice")
	if len(keys) != 0 || len(recs) != 0 || used != 0 {
		t.Fatalf("left behind: objects %v, records %d, stored bytes %d", keys, len(recs), used)
	}
}

func TestUploadTaken(t *testing.T) {
	cases := []struct {
		name, declared string
		data           []byte
		typ            string
		w, h           int
	}{
		{"cat.png", "image/png", pngFile, "image/png", 3, 2},
		{"photo.JPG", "", jpegFile, "image/jpeg", 40, 30},
		{"anim.gif", "image/gif", gifFile, "image/gif", 5, 7},
		{"pixel.webp", "image/webp", webpFile, "image/webp", 1, 1},
		{"report.pdf", "application/pdf", pdfFile, "application/pdf", 0, 0},
		{"notes.txt", "text/plain", []byte("plain words\n"), "text/plain", 0, 0},
		{"README.md", "text/markdown", []byte("# Title\n\n- item ✓\n"), "text/markdown", 0, 0},
		{"table.csv", "text/csv", []byte("a,b\n1,2\n"), "text/csv", 0, 0},
		{"data.json", "application/json", []byte(`{"a": [1, 2]}`), "application/json", 0, 0},
		{"main.go", "application/octet-stream", []byte("package main\n\nfunc main() {}\n"), "text/plain", 0, 0},
		{"", "", []byte("no name at all"), "text/plain", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.typ+" "+c.name, func(t *testing.T) {
			e := newEnv(0, 0, 0)
			a, err := e.upload(c.name, c.declared, c.data)
			if err != nil {
				t.Fatal(err)
			}
			if a.Type != c.typ || a.Size != int64(len(c.data)) || a.Width != c.w || a.Height != c.h || len(a.SHA256) != 64 {
				t.Fatalf("got %+v", a)
			}
			_, r, err := e.svc.Open(context.Background(), "alice", a.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			got.ReadFrom(r)
			if !bytes.Equal(got.Bytes(), c.data) {
				t.Fatal("the bytes read back differ")
			}
			if used, _ := e.db.StoredBytes(context.Background(), "alice"); used != a.Size {
				t.Fatalf("stored bytes = %d, want the file's %d (the rest of the reservation given back)", used, a.Size)
			}
			if _, _, err := e.svc.Open(context.Background(), "bob", a.ID); errs.CodeOf(err) != errs.ENOTFOUND {
				t.Fatalf("bob opened alice's attachment: %v", err)
			}
		})
	}
}

func TestUploadRefused(t *testing.T) {
	binaryLater := append(bytes.Repeat([]byte("text "), 600), 0, 1, 2)
	cases := []struct {
		why, name, declared string
		data                []byte
		code                errs.Code
		says                string
	}{
		{"empty", "a.txt", "", nil, errs.EINVALID, "empty"},
		{"too large", "a.txt", "", bytes.Repeat([]byte("x"), 5000), errs.ETOOLARGE, "larger than the 4096 bytes"},
		{"svg bytes", "pic.png", "", []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`), errs.EUNSUPPORTED, "SVG"},
		{"svg name", "pic.svg", "image/svg+xml", pngFile, errs.EUNSUPPORTED, "SVG images"},
		{"html", "page.txt", "", []byte("\n <!DOCTYPE html><html><script>alert(1)</script>"), errs.EUNSUPPORTED, "HTML"},
		{"elf", "tool", "", []byte("\x7fELF\x02\x01\x01\x00rest"), errs.EUNSUPPORTED, "executable"},
		{"exe name", "setup.exe", "", []byte("harmless words"), errs.EUNSUPPORTED, "executables"},
		{"zip", "a.zip", "", []byte("PK\x03\x04rest"), errs.EUNSUPPORTED, "ZIP"},
		{"binary", "a.bin", "", []byte{0, 1, 2, 3, 200, 201}, errs.EUNSUPPORTED, "not one taken"},
		{"name lies", "cat.png", "", pdfFile, errs.EUNSUPPORTED, "name says PNG image but its bytes are PDF document"},
		{"content type lies", "cat", "image/png", []byte("just words"), errs.EUNSUPPORTED, "Content-Type says PNG image"},
		{"broken png", "cat.png", "", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{9}, 100)...), errs.EUNSUPPORTED, "not a valid one"},
		{"text turns binary", "a.txt", "", binaryLater, errs.EUNSUPPORTED, "not UTF-8 text"},
		{"cut pdf", "a.pdf", "", pdfFile[:len(pdfFile)-8], errs.EUNSUPPORTED, "not a complete one"},
		{"control in name", "a\x01.txt", "", []byte("words"), errs.EINVALID, "name"},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			e := newEnv(4096, 0, 0)
			_, err := e.upload(c.name, c.declared, c.data)
			if errs.CodeOf(err) != c.code || !strings.Contains(errs.Message(err), c.says) {
				t.Fatalf("err = %v; want %s saying %q", err, c.code, c.says)
			}
			if !strings.HasPrefix(errs.Message(err), "file:") && !strings.HasPrefix(errs.Message(err), "name:") {
				t.Fatalf("the message %q names no field", errs.Message(err))
			}
			e.nothingStored(t)
		})
	}
}

// TestUploadLimits: the quota counts stored files; the minute counts
// uploads; a refused one stores nothing more.
func TestUploadLimits(t *testing.T) {
	e := newEnv(0, 2*int64(len(jpegFile)), 2)
	for range 2 {
		if _, err := e.upload("p.jpg", "", jpegFile); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.upload("p.jpg", "", jpegFile)
	if errs.CodeOf(err) != errs.ERATELIMITED || errs.RetryAfter(err) != 30*time.Second {
		t.Fatalf("third upload in a minute: %v (retry after %v)", err, errs.RetryAfter(err))
	}
	e.svc.PerMinute = 0
	_, err = e.upload("p.jpg", "", jpegFile)
	if errs.CodeOf(err) != errs.EQUOTA || !strings.Contains(errs.Message(err), "quota") {
		t.Fatalf("upload past the quota: %v", err)
	}
	keys, _ := e.blobs.List(context.Background(), "users/")
	if len(keys) != 2 {
		t.Fatalf("objects %v, want the 2 taken", keys)
	}
}
