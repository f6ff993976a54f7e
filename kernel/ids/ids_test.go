package ids

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for id, want := range map[string]bool{
		"abc": true, "A-b_9": true, New(): true, strings.Repeat("a", 128): true,
		"": false, "a/b": false, ".": false, "..": false, "__x__": false, "a b": false,
		strings.Repeat("a", 129): false, "é": false,
	} {
		if got := Valid(id); got != want {
			t.Errorf("Valid(%q) = %v, want %v", id, got, want)
		}
	}
	if a, b := New(), New(); a == b || len(a) != 20 {
		t.Errorf("New: %q %q", a, b)
	}
}
