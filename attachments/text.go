package attachments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// TextBytes is the most of a document's text that is kept, and so sent
// to the model and searched: its first 32 KiB (as much as a message).
const TextBytes = 32 << 10

// cutNote ends a document's text that was cut at TextBytes.
const cutNote = "\n[the rest of the document is cut]"

// keepText adds p to a document's text kept so far, up to TextBytes.
func keepText(kept, p []byte) []byte {
	if room := TextBytes + utf8.UTFMax - len(kept); room > 0 {
		kept = append(kept, p[:min(len(p), room)]...)
	}
	return kept
}

// pdfText reads the text of the PDF stored under key (size bytes), page
// by page until TextBytes: the document is read whole into memory, as
// the PDF reader needs to reach any of its bytes. A PDF whose text cannot
// be read (scanned pages, a font without a text mapping) has none; that
// is no error.
func (s *Service) pdfText(ctx context.Context, key string, size int64) (string, error) {
	r, err := s.Blobs.Open(ctx, key)
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return "", readFailed(err)
	}
	return PDFText(data), nil
}

// PDFText is the text of a PDF's pages, in order, cut at TextBytes; ""
// when none can be read.
func PDFText(data []byte) (text string) {
	defer func() {
		if recover() != nil { // the reader panics on some malformed files
			text = ""
		}
	}()
	doc, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return ""
	}
	var b strings.Builder
	fonts := map[string]*pdf.Font{}
	for i := 1; i <= doc.NumPage() && b.Len() <= TextBytes; i++ {
		page := doc.Page(i)
		if page.V.IsNull() {
			continue
		}
		t, err := page.GetPlainText(fonts)
		if err != nil {
			continue
		}
		if b.Len() > 0 && t != "" {
			b.WriteString("\n\n")
		}
		b.WriteString(strings.TrimSpace(t))
	}
	out := strings.ToValidUTF8(b.String(), "")
	return finishText([]byte(out), int64(len(out)))
}

// DocumentText is what the model is sent of a document: its label and
// its text (or a note that it has none).
func DocumentText(a *Attachment) string {
	if strings.TrimSpace(a.Text) == "" {
		return fmt.Sprintf("[document: %s] (no text could be read from it)", a.Name)
	}
	return fmt.Sprintf("[document: %s]\n%s", a.Name, a.Text)
}

// finishText is the text kept of a document of n bytes: cut at
// TextBytes on a character's boundary, with a note when cut.
func finishText(kept []byte, n int64) string {
	if n <= TextBytes && int64(len(kept)) == n {
		return string(kept)
	}
	cut := min(len(kept), TextBytes)
	for cut > 0 && !utf8.RuneStart(kept[cut]) {
		cut--
	}
	return string(kept[:cut]) + cutNote
}
