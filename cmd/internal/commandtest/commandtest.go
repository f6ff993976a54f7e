// Package commandtest helps the commands' tests.
package commandtest

import (
	"context"
	"io"
	"testing"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/cmd/internal/command"
)

// Open opens the backend getenv configures as the command named name
// does, closed when tb ends; tb fails if it cannot.
func Open(tb testing.TB, name string, getenv func(string) string) *app.App {
	tb.Helper()
	backend, code := command.Open(context.Background(), name, getenv, false, io.Discard)
	if backend == nil {
		tb.Fatalf("opening the backend: exit code %d", code)
	}
	tb.Cleanup(func() { backend.Close() })
	return backend
}
