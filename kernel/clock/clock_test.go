package clock

import (
	"testing"
	"time"
)

func TestStored(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	got := Stored(func() time.Time { return at })
	if want := time.Date(2026, 1, 2, 2, 4, 5, 123456000, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Stored = %v, want %v", got, want)
	}
}
