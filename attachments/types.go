package attachments

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
)

// Type is a kind of file that is taken.
type Type struct {
	MIME  string
	Label string // in words, for errors
	Image bool
	Text  bool // UTF-8 text throughout
	// Inline: a browser may show it in place; everything else is served
	// as a download (Content-Disposition: attachment).
	Inline bool
}

// Types are the files taken, by MIME type.
var Types = map[string]Type{
	"image/png":        {MIME: "image/png", Label: "PNG image", Image: true, Inline: true},
	"image/jpeg":       {MIME: "image/jpeg", Label: "JPEG image", Image: true, Inline: true},
	"image/webp":       {MIME: "image/webp", Label: "WebP image", Image: true, Inline: true},
	"image/gif":        {MIME: "image/gif", Label: "GIF image", Image: true, Inline: true},
	"application/pdf":  {MIME: "application/pdf", Label: "PDF document"},
	"text/plain":       {MIME: "text/plain", Label: "text", Text: true},
	"text/markdown":    {MIME: "text/markdown", Label: "Markdown", Text: true},
	"text/csv":         {MIME: "text/csv", Label: "CSV", Text: true},
	"application/json": {MIME: "application/json", Label: "JSON", Text: true},
}

// magic are the first bytes of the binary types taken.
var magic = []struct {
	prefix string
	mime   string
}{
	{"\x89PNG\r\n\x1a\n", "image/png"},
	{"\xff\xd8\xff", "image/jpeg"},
	{"GIF87a", "image/gif"},
	{"GIF89a", "image/gif"},
	{"%PDF-", "application/pdf"},
}

// refused are the first bytes of files never taken, named for the error.
var refused = []struct{ prefix, label string }{
	{"\x7fELF", "an executable (ELF)"},
	{"MZ", "an executable (Windows)"},
	{"\xcf\xfa\xed\xfe", "an executable (Mach-O)"},
	{"\xce\xfa\xed\xfe", "an executable (Mach-O)"},
	{"\xca\xfe\xba\xbe", "an executable (Mach-O or Java class)"},
	{"\x00asm", "WebAssembly"},
	{"PK\x03\x04", "a ZIP archive"},
	{"\x1f\x8b", "a gzip archive"},
}

// markup starts a text a browser would run as a page (HTML, SVG, XML).
var markup = []string{"<!doctype html", "<html", "<svg", "<?xml", "<script", "<head", "<body", "<iframe", "<!--"}

// byExtension is the type a file's name claims, for the kinds a name can
// lie about; text extensions pick the text's subtype.
var byExtension = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif",
	".pdf": "application/pdf", ".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown",
	".csv": "text/csv", ".json": "application/json",
}

// refusedExtensions name types never taken, whatever the bytes say.
var refusedExtensions = map[string]string{
	".svg": "SVG images", ".svgz": "SVG images", ".html": "HTML pages", ".htm": "HTML pages", ".xhtml": "HTML pages",
	".exe": "executables", ".dll": "executables", ".msi": "executables", ".com": "executables", ".scr": "executables",
	".app": "executables", ".dmg": "disk images", ".apk": "executables", ".jar": "executables", ".bat": "executables",
}

// Sniff reads the type of a file from its first bytes (head, at most a
// few KiB), checked against the type its name and the client's declared
// Content-Type claim. Text takes its subtype (Markdown, CSV, JSON) from
// the name; source code is plain text.
func Sniff(head []byte, name, declared string) (Type, error) {
	ext := strings.ToLower(path.Ext(name))
	if what, ok := refusedExtensions[ext]; ok {
		return Type{}, errs.Errorf(errs.EUNSUPPORTED, "file: %s are not taken", what)
	}
	t, err := sniffBytes(head, ext)
	if err != nil {
		return Type{}, err
	}
	if claim, ok := byExtension[ext]; ok && !sameFamily(claim, t) {
		return Type{}, errs.Errorf(errs.EUNSUPPORTED, "file: its name says %s but its bytes are %s", Types[claim].Label, t.Label)
	}
	if claim, ok := Types[mediaType(declared)]; ok && !sameFamily(claim.MIME, t) {
		return Type{}, errs.Errorf(errs.EUNSUPPORTED, "file: its Content-Type says %s but its bytes are %s", claim.Label, t.Label)
	}
	return t, nil
}

// sniffBytes is the type head's bytes show.
func sniffBytes(head []byte, ext string) (Type, error) {
	for _, m := range magic {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			return Types[m.mime], nil
		}
	}
	if len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP" {
		return Types["image/webp"], nil
	}
	for _, r := range refused {
		if bytes.HasPrefix(head, []byte(r.prefix)) {
			return Type{}, errs.Errorf(errs.EUNSUPPORTED, "file: %s is not taken", r.label)
		}
	}
	if !isText(head) {
		return Type{}, errs.Errorf(errs.EUNSUPPORTED, "file: its type is not one taken (PNG, JPEG, WebP, GIF, PDF, or UTF-8 text)")
	}
	lead := strings.ToLower(strings.TrimLeft(strings.TrimPrefix(string(head), "\ufeff"), " \t\r\n"))
	for _, m := range markup {
		if strings.HasPrefix(lead, m) {
			return Type{}, errs.Errorf(errs.EUNSUPPORTED, "file: HTML, SVG and XML are not taken")
		}
	}
	if claim, ok := byExtension[ext]; ok && Types[claim].Text {
		return Types[claim], nil
	}
	return Types["text/plain"], nil
}

// sameFamily: a name or a Content-Type that claims text is not lying
// about which text; one that claims an image or a PDF must be exactly it.
func sameFamily(claim string, t Type) bool {
	if Types[claim].Text {
		return t.Text
	}
	return claim == t.MIME
}

func mediaType(declared string) string {
	mt, _, _ := strings.Cut(declared, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// isText reports whether b is UTF-8 text: valid but for a rune cut at its
// end, with no NUL and few control characters.
func isText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	controls := 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:])
		}
		if r == 0 {
			return false
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' {
			controls++
		}
		i += n
	}
	return controls*100 <= len(b)
}
