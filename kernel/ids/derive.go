package ids

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync/atomic"
)

// MinSecretLen is the fewest bytes a secret for derived ids may have.
const MinSecretLen = 32

// secret keys every derived id. Until SetSecret is called it is random for
// the process: ids derived in it are stable only while it runs, which is
// what tests and one-off tools need; a server sets the deployment's.
var secret atomic.Pointer[[]byte]

func init() {
	b := make([]byte, MinSecretLen)
	rand.Read(b)
	secret.Store(&b)
}

// SetSecret makes b the secret ids are derived under, from now on: the
// same secret on every instance, so that a retry reaching another instance
// derives the same ids.
func SetSecret(b []byte) error {
	if len(b) < MinSecretLen {
		return errors.New("the id secret must have at least 32 bytes")
	}
	c := append([]byte(nil), b...)
	secret.Store(&c)
	return nil
}

// Derive returns n hex digits (n even, at most 64) naming parts under the
// secret: the same parts always give the same id, and without the secret
// nobody can tell which parts give which id, so a caller who knows a uid
// and a guessable key still cannot name another's session or message.
func Derive(n int, parts ...string) string {
	mac := hmac.New(sha256.New, *secret.Load())
	for _, p := range parts {
		mac.Write([]byte(p))
		mac.Write([]byte{0})
	}
	return hex.EncodeToString(mac.Sum(nil))[:n]
}
