package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/kernel/errs"
)

// RunBlobs is the contract every blob store (attachments.Blobs) passes:
// the in-process one and Cloud Storage on its emulator. open returns a
// new, empty store for a test.
func RunBlobs(t *testing.T, open func(t *testing.T) attachments.Blobs) {
	t.Run("WriteOpen", func(t *testing.T) { t.Parallel(); testBlobWriteOpen(t, open(t)) })
	t.Run("FailedWriteLeavesNothing", func(t *testing.T) { t.Parallel(); testBlobFailedWrite(t, open(t)) })
	t.Run("ListDelete", func(t *testing.T) { t.Parallel(); testBlobListDelete(t, open(t)) })
}

// testBlobWriteOpen: bytes read back exactly, a large object too (more
// than one chunk of a resumable upload); an absent one is not found.
func testBlobWriteOpen(t *testing.T, b attachments.Blobs) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), 70_000) // 1.1 MB
	for key, data := range map[string][]byte{"users/u/attachments/small": []byte("hello"), "users/u/attachments/big": big} {
		n := Must[int64](t)(b.Write(ctx, key, "text/plain", bytes.NewReader(data)))
		if n != int64(len(data)) {
			t.Fatalf("%s: wrote %d bytes, want %d", key, n, len(data))
		}
		if got := read(t, b, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes back, not the %d written", key, len(got), len(data))
		}
	}
	_, err := b.Open(ctx, "users/u/attachments/none")
	WantCode(t, err, errs.ENOTFOUND)
}

// failing reads n bytes, then fails.
type failing struct{ n int }

func (f *failing) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("the client went away")
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

// testBlobFailedWrite: a write whose reader fails, early or after
// several chunks, leaves no object.
func testBlobFailedWrite(t *testing.T, b attachments.Blobs) {
	ctx := context.Background()
	for _, n := range []int{10, 900_000} {
		if _, err := b.Write(ctx, "users/u/attachments/cut", "text/plain", &failing{n: n}); err == nil {
			t.Fatalf("a write cut after %d bytes succeeded", n)
		}
		if keys := Must[[]string](t)(b.List(ctx, "users/")); len(keys) != 0 {
			t.Fatalf("a write cut after %d bytes left %v", n, keys)
		}
	}
}

// testBlobListDelete: listing is by prefix and in order; deleting is
// idempotent.
func testBlobListDelete(t *testing.T, b attachments.Blobs) {
	ctx := context.Background()
	for _, k := range []string{"users/b/attachments/2", "users/a/attachments/1", "users/b/attachments/1", "users/bb/attachments/1"} {
		Must[int64](t)(b.Write(ctx, k, "text/plain", bytes.NewReader([]byte(k))))
	}
	got := Must[[]string](t)(b.List(ctx, "users/b/"))
	if want := []string{"users/b/attachments/1", "users/b/attachments/2"}; !slices.Equal(got, want) {
		t.Fatalf("List(users/b/) = %v, want %v", got, want)
	}
	ok(t, b.Delete(ctx, "users/b/attachments/1"))
	ok(t, b.Delete(ctx, "users/b/attachments/1"))
	got = Must[[]string](t)(b.List(ctx, "users/"))
	if want := []string{"users/a/attachments/1", "users/b/attachments/2", "users/bb/attachments/1"}; !slices.Equal(got, want) {
		t.Fatalf("after a delete: %v, want %v", got, want)
	}
}

func read(tb testing.TB, b attachments.Blobs, key string) []byte {
	tb.Helper()
	r := Must[io.ReadCloser](tb)(b.Open(context.Background(), key))
	defer r.Close()
	return Must[[]byte](tb)(io.ReadAll(r))
}
