// Package ids makes and checks the ids of the documents the backend
// creates or accepts from callers.
package ids

import (
	"crypto/rand"
	"regexp"
	"strings"
)

const (
	maxLen       = 128
	generatedLen = 20
	alphabet     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

var re = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Valid reports whether id can name a document we store: letters, digits,
// '_' and '-', at most 128 characters, not starting with "__" (which
// Firestore reserves).
func Valid(id string) bool {
	return len(id) > 0 && len(id) <= maxLen && re.MatchString(id) && !strings.HasPrefix(id, "__")
}

// New returns a random 20-character id, like Firestore's own.
func New() string {
	b := make([]byte, generatedLen)
	rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
