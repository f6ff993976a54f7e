package emulatortest

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/storage"

	"github.com/chatmemory/backend/emulator"
)

// storageHost is the Cloud Storage emulator tests use: the one
// STORAGE_EMULATOR_HOST names, or else one started in this process (once)
// and named there, so the official client reaches it as it would any.
var storageHost = sync.OnceValues(func() (string, error) {
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
		return host, nil
	}
	s, err := emulator.StartStorage("127.0.0.1:0", nil)
	if err != nil {
		return "", err
	}
	return s.Addr, os.Setenv("STORAGE_EMULATOR_HOST", s.Addr)
})

// Storage returns a client of the Cloud Storage emulator and a new, empty
// bucket of the test's own; the client is closed when tb ends.
func Storage(tb testing.TB) (*storage.Client, string) {
	tb.Helper()
	if _, err := storageHost(); err != nil {
		tb.Fatalf("storage emulator: %v", err)
	}
	ctx := context.Background()
	client, err := storage.NewClient(ctx, storage.WithJSONReads())
	if err != nil {
		tb.Fatalf("storage client: %v", err)
	}
	tb.Cleanup(func() { client.Close() })
	bucket := strings.TrimPrefix(ProjectID(), "demo-test-") + "-attachments"
	if err := client.Bucket(bucket).Create(ctx, "demo-test", nil); err != nil {
		tb.Fatalf("create bucket %s: %v", bucket, err)
	}
	return client, bucket
}
