package functions

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/attachments"
)

// TestDisposition: only the raster images taken are shown in place; every
// other type, those a browser could run (SVG, HTML, XML, scripts) above
// all, is a download, whatever the record says.
func TestDisposition(t *testing.T) {
	inline := map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}
	types := []string{"image/svg+xml", "text/html", "application/xhtml+xml", "text/xml", "application/xml",
		"text/javascript", "application/javascript", "application/octet-stream", ""}
	for mime := range attachments.Types {
		types = append(types, mime)
	}
	for _, mime := range types {
		d := disposition(&attachments.Attachment{Type: mime, Name: "f"})
		if got := strings.HasPrefix(d, "inline"); got != inline[mime] || !strings.HasPrefix(d, "inline") && !strings.HasPrefix(d, "attachment") {
			t.Errorf("%q is served %q", mime, d)
		}
	}
}
