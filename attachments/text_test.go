package attachments_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/attachments/attachmentstest"
)

// TestDocumentText: a document keeps its text for the model and search:
// a PDF's pages in order, text as it is, both cut at TextBytes on a
// character's boundary with a note; an image and a PDF without text keep
// none.
func TestDocumentText(t *testing.T) {
	long := "a" + strings.Repeat("é", attachments.TextBytes) // 2 bytes each after the "a": TextBytes falls inside one
	for _, c := range []struct {
		name   string
		data   []byte
		want   string // a prefix of the kept text
		cut    bool
		length int // bytes of text before the note; 0: not checked
	}{
		{"notes.md", []byte("# Plan\nShip on Friday.\n"), "# Plan\nShip on Friday.\n", false, 0},
		{"report.pdf", attachmentstest.PDF("Quarterly revenue grew", "Costs fell"), "Quarterly revenue grew\n\nCosts fell", false, 0},
		{"long.txt", []byte(long), "aéé", true, attachments.TextBytes - 1},
		{"empty.pdf", []byte(MinimalPDF("")), "", false, 0},
		{"cat.png", pngFile, "", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(0, 0, 0)
			a, err := e.svc.Upload(context.Background(), "alice", attachments.Upload{Name: c.name, Body: strings.NewReader(string(c.data))})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := e.db.GetAttachment(context.Background(), "alice", a.ID)
			if err != nil {
				t.Fatal(err)
			}
			text, cut := strings.CutSuffix(stored.Text, "\n[the rest of the document is cut]")
			if !strings.HasPrefix(text, c.want) || cut != c.cut || c.want == "" && text != "" {
				t.Fatalf("text %.80q (cut %v), want %.80q (cut %v)", stored.Text, cut, c.want, c.cut)
			}
			if c.length > 0 && len(text) != c.length {
				t.Fatalf("kept %d bytes, want %d", len(text), c.length)
			}
		})
	}
}

// TestPDFTextOfBrokenFiles: a PDF the reader cannot parse has no text,
// and nothing panics.
func TestPDFTextOfBrokenFiles(t *testing.T) {
	good := attachmentstest.PDF("hello")
	for _, data := range [][]byte{good[:len(good)/2], []byte("%PDF-1.4\n%%EOF"), append([]byte("%PDF-1.7\nxref\n0 99999999\n"), good[9:]...)} {
		if got := attachments.PDFText(data); got != "" {
			t.Errorf("PDFText of a broken file = %q", got)
		}
	}
	if got := attachments.PDFText(good); got != "hello" {
		t.Fatalf("PDFText = %q, want hello", got)
	}
}
