package emulator

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// DefaultStorageAddr is where make dev's Cloud Storage emulator listens
// (the Firebase Storage emulator's port in firebase.json).
const DefaultStorageAddr = "127.0.0.1:9199"

// Storage is an emulator of the Cloud Storage JSON API (fake-gcs-server)
// running in this process; the official client reaches it through
// STORAGE_EMULATOR_HOST. It keeps objects in memory.
type Storage struct {
	server *fakestorage.Server
	Addr   string // host:port
}

// StartStorage serves the emulator on addr (host:port; port 0: any free
// one).
func StartStorage(addr string, log io.Writer) (*Storage, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("storage emulator: %w", err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("storage emulator: port %q: %w", p, err)
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: host, Port: uint16(port), Writer: log})
	if err != nil {
		return nil, fmt.Errorf("storage emulator on %s: %w", addr, err)
	}
	u, err := url.Parse(srv.URL())
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("storage emulator: %w", err)
	}
	return &Storage{server: srv, Addr: u.Host}, nil
}

// StorageAnswers reports whether a Cloud Storage emulator answers on addr.
func StorageAnswers(ctx context.Context, addr string) bool {
	code, _, err := get(ctx, "http://"+addr+"/storage/v1/b?project=p")
	return err == nil && code == 200
}

// Env points the official client at the emulator.
func (s *Storage) Env() []string { return []string{"STORAGE_EMULATOR_HOST=" + s.Addr} }

// Stop stops the emulator; its objects are gone.
func (s *Storage) Stop() { s.server.Stop() }
