package attachments_test

import (
	"testing"

	"github.com/chatmemory/backend/attachments"
)

// TestImageTokens: OpenAI's published examples.
func TestImageTokens(t *testing.T) {
	for _, c := range []struct {
		w, h   int
		detail string
		want   int
	}{
		{1024, 1024, "high", 765},  // scaled to 768×768: 4 tiles
		{2048, 4096, "high", 1105}, // 1024×2048, then 768×1536: 6 tiles
		{4096, 8192, "low", 85},
		{100, 50, "auto", 255}, // one tile
	} {
		if got := attachments.ImageTokens(c.w, c.h, c.detail); got != c.want {
			t.Errorf("ImageTokens(%d, %d, %s) = %d, want %d", c.w, c.h, c.detail, got, c.want)
		}
	}
}
