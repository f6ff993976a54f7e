// Package gcsblob keeps the bytes of attachments in Cloud Storage
// (attachments.Blobs), in one bucket (the project's default Firebase
// bucket in production) that only the server reads and writes. Locally
// and in tests the official client reaches an emulator of the Cloud
// Storage API through STORAGE_EMULATOR_HOST, as it does by itself.
package gcsblob

import (
	"context"
	"errors"
	"io"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/chatmemory/backend/kernel/errs"
)

// ChunkSize is what a write holds in memory before sending it (a
// resumable upload in chunks of this size): a file is never held whole.
const ChunkSize = 256 << 10

// Blobs is a bucket.
type Blobs struct {
	bucket *storage.BucketHandle
}

// New keeps attachments in bucket through client. The caller owns the
// client.
func New(client *storage.Client, bucket string) *Blobs {
	return &Blobs{bucket: client.Bucket(bucket)}
}

// Write streams r into a new object key. The object appears only when
// the upload completes; a failed one is cancelled and leaves none.
func (b *Blobs) Write(ctx context.Context, key, contentType string, r io.Reader) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := b.bucket.Object(key).If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
	w.ContentType, w.ChunkSize = contentType, ChunkSize
	n, err := io.Copy(w, r)
	if err != nil {
		cancel() // aborts the upload
		w.Close()
		return n, err
	}
	if err := w.Close(); err != nil {
		return n, translate(err)
	}
	return n, nil
}

// Open reads the object key.
func (b *Blobs) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.bucket.Object(key).NewReader(ctx)
	if err != nil {
		return nil, translate(err)
	}
	return r, nil
}

// Delete removes the object key; an absent one is no error.
func (b *Blobs) Delete(ctx context.Context, key string) error {
	err := b.bucket.Object(key).Delete(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil
	}
	return translate(err)
}

// List names the objects under prefix, in name order.
func (b *Blobs) List(ctx context.Context, prefix string) ([]string, error) {
	it := b.bucket.Objects(ctx, &storage.Query{Prefix: prefix})
	var keys []string
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return keys, nil
		}
		if err != nil {
			return nil, translate(err)
		}
		keys = append(keys, attrs.Name)
	}
}

// translate turns the client's errors into the application's codes.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrObjectNotExist):
		return errs.Wrap(errs.ENOTFOUND, err, "no such attachment")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errs.Wrap(errs.EUNAVAILABLE, err, "file storage did not answer in time")
	}
	return errs.Wrap(errs.EUNAVAILABLE, err, "file storage is unavailable; try again")
}
