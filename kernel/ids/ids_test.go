package ids

import (
	"crypto/sha256"
	"encoding/hex"
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

func TestDerive(t *testing.T) {
	a := Derive(32, "alice", "msg-3")
	if len(a) != 32 || a != Derive(32, "alice", "msg-3") {
		t.Fatalf("not stable: %q", a)
	}
	for name, other := range map[string]string{
		"another key":   Derive(32, "alice", "msg-4"),
		"another user":  Derive(32, "bob", "msg-3"),
		"parts shifted": Derive(32, "alicemsg-3"),
		"joined apart":  Derive(32, "alic", "emsg-3"),
	} {
		if other == a {
			t.Errorf("%s derives the same id", name)
		}
	}
	old := Derive(32, "alice", "msg-3")
	if err := SetSecret([]byte("short")); err == nil {
		t.Error("a short secret was taken")
	}
	if err := SetSecret([]byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	if Derive(32, "alice", "msg-3") == old {
		t.Error("the id does not depend on the secret")
	}
	// Not the unkeyed hash the ids were once: computing it needs the secret.
	plain := sha256.Sum256([]byte("alice\x00msg-3"))
	if Derive(20, "alice", "msg-3") == hex.EncodeToString(plain[:10]) {
		t.Error("the id is the unkeyed hash of its parts")
	}
}
