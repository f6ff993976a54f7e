package attachments

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"image"
	_ "image/gif" // registers the decoders DecodeConfig uses
	_ "image/jpeg"
	_ "image/png"
	"unicode/utf8"

	_ "golang.org/x/image/webp"

	"github.com/chatmemory/backend/kernel/errs"
)

// headBytes is how much of an image is kept to read its dimensions: a
// JPEG's size follows its metadata, which cameras make long.
const headBytes = 256 << 10

// MaxPixels bounds an image's width times height (a small file can
// claim a huge picture).
const MaxPixels = 50_000_000

// checker watches the bytes of an upload go by: it counts and hashes them
// and keeps what the checks of its type need (an image's head, a PDF's
// tail, whether text stays text), never the whole file.
type checker struct {
	t      Type
	n      int64
	sum    hash.Hash
	head   []byte // images: the first headBytes
	tail   []byte // PDF: the last 1 KiB
	carry  []byte // text: a rune cut by a chunk's end
	binary bool   // text: a byte that is not text was seen
	text   []byte // text: its first TextBytes, kept
}

func newChecker(t Type) *checker { return &checker{t: t, sum: sha256.New()} }

// Write sees the next bytes of the file.
func (c *checker) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.sum.Write(p)
	switch {
	case c.t.Image && len(c.head) < headBytes:
		c.head = append(c.head, p[:min(len(p), headBytes-len(c.head))]...)
	case c.t.MIME == "application/pdf":
		c.tail = append(c.tail, p...)
		if len(c.tail) > 1024 {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-1024:]...)
		}
	case c.t.Text && !c.binary:
		c.checkText(p)
		c.text = keepText(c.text, p)
	}
	return len(p), nil
}

// checkText checks that p, after what was carried, is UTF-8 without NUL.
func (c *checker) checkText(p []byte) {
	b := append(c.carry, p...)
	c.carry = nil
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			if !utf8.FullRune(b[i:]) {
				c.carry = append([]byte(nil), b[i:]...)
				return
			}
			c.binary = true
			return
		}
		if r == 0 {
			c.binary = true
			return
		}
		i += n
	}
}

// verdict checks the whole file now that it has been seen, and fills in
// what it learned of a.
func (c *checker) verdict(a *Attachment) error {
	a.Size, a.SHA256 = c.n, hex.EncodeToString(c.sum.Sum(nil))
	switch {
	case c.t.Image:
		cfg, _, err := image.DecodeConfig(bytes.NewReader(c.head))
		if err != nil {
			return errs.Errorf(errs.EUNSUPPORTED, "file: it starts like a %s but is not a valid one", c.t.Label)
		}
		if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
			return errs.Errorf(errs.EUNSUPPORTED, "file: the image's %dx%d pixels are more than the %d taken", cfg.Width, cfg.Height, MaxPixels)
		}
		a.Width, a.Height = cfg.Width, cfg.Height
	case c.t.MIME == "application/pdf":
		if !bytes.Contains(c.tail, []byte("%%EOF")) {
			return errs.Errorf(errs.EUNSUPPORTED, "file: it starts like a PDF document but is not a complete one")
		}
	case c.t.Text && (c.binary || len(c.carry) > 0):
		return errs.Errorf(errs.EUNSUPPORTED, "file: it starts as %s but holds bytes that are not UTF-8 text", c.t.Label)
	case c.t.Text:
		a.Text = finishText(c.text, c.n)
	}
	return nil
}
