package inprocdb

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/chatmemory/backend/kernel/errs"
)

// Blobs is the in-process blob store (attachments.Blobs): objects in a
// map, lost when the process stops.
type Blobs struct {
	mu      sync.Mutex
	objects map[string][]byte
}

// NewBlobs returns an empty blob store.
func NewBlobs() *Blobs { return &Blobs{objects: map[string][]byte{}} }

// Write reads r to its end and keeps it under key only then, so a failed
// write leaves nothing.
func (b *Blobs) Write(ctx context.Context, key, _ string, r io.Reader) (int64, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, r)
	if err != nil {
		return n, err
	}
	if err := ctx.Err(); err != nil {
		return n, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[key] = buf.Bytes()
	return n, nil
}

// Open reads the object key.
func (b *Blobs) Open(_ context.Context, key string) (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[key]
	if !ok {
		return nil, errs.Errorf(errs.ENOTFOUND, "no such attachment")
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Delete removes the object key, if there is one.
func (b *Blobs) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key)
	return nil
}

// List names the objects under prefix, in name order.
func (b *Blobs) List(_ context.Context, prefix string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}
