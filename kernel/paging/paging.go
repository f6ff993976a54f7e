// Package paging holds what every listing shares: page sizes, and opaque
// page tokens that carry a listing's cursor.
package paging

import (
	"encoding/base64"
	"encoding/json"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// Page sizes for lists.
const (
	DefaultSize = 20
	MaxSize     = 100
)

// Limit checks a requested page size; 0 means DefaultSize.
func Limit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultSize, nil
	case n < 0 || n > MaxSize:
		return 0, errs.Errorf(errs.EINVALID, "limit must be between 1 and %d", MaxSize)
	}
	return n, nil
}

// Encode makes an opaque page token of v, a small struct of strings and
// numbers (which cannot fail to marshal).
func Encode(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads a token made by Encode into v.
func Decode(tok string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 {
		return errs.Errorf(errs.EINVALID, "malformed pageToken")
	}
	if err := strictjson.Decode(b, v); err != nil {
		return errs.Errorf(errs.EINVALID, "malformed pageToken")
	}
	return nil
}
