package emulator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fileReady is a probe that answers once the file addr exists.
func fileReady(_ context.Context, addr string) bool {
	_, err := os.Stat(addr)
	return err == nil
}

// TestSlowEmulatorNamedWithItsLastLines: an emulator that does not answer
// in time is named, with its command, pid and last lines; the other,
// already started, is stopped.
func TestSlowEmulatorNamedWithItsLastLines(t *testing.T) {
	dir := t.TempDir()
	fast := filepath.Join(dir, "fast")
	_, err := start(context.Background(), Config{Dir: dir, StartTimeout: 2 * time.Second, Log: nilWriter{}, Progress: nilWriter{}}, []emu{
		{"fast", fast, fileReady, []string{"sh", "-c", "touch " + fast + "; exec sleep 60"}},
		{"slow", filepath.Join(dir, "never"), fileReady, []string{"sh", "-c", "for i in $(seq 1 30); do echo booting step $i; done; printf 'half a line'; exec sleep 60"}},
	})
	if err == nil {
		t.Fatal("a start that never answered succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"emulator: slow (sh, pid ", "did not answer", "within 2s", "booting step 30", "half a line"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "booting step 1\n") || strings.Contains(msg, "fast") {
		t.Errorf("the error shows more than the slow emulator's last lines:\n%s", msg)
	}
}

// TestExitedEmulatorShowsItsLastLines: one that exits says so, with what
// it printed last.
func TestExitedEmulatorShowsItsLastLines(t *testing.T) {
	dir := t.TempDir()
	_, err := start(context.Background(), Config{Dir: dir, StartTimeout: time.Minute, Log: nilWriter{}, Progress: nilWriter{}}, []emu{
		{"auth", filepath.Join(dir, "never"), fileReady, []string{"sh", "-c", "echo port 9099 is taken >&2; exit 3"}},
	})
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 3)") || !strings.Contains(err.Error(), "port 9099 is taken") {
		t.Fatalf("got %v", err)
	}
}

// TestEmulatorsStartTogether: two slow emulators take as long as the
// slower, not the sum, and are stopped by Stop.
func TestEmulatorsStartTogether(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	began := time.Now()
	e, err := start(context.Background(), Config{Dir: dir, StartTimeout: time.Minute, Log: nilWriter{}, Progress: nilWriter{}}, []emu{
		{"a", a, fileReady, []string{"sh", "-c", "sleep 2; touch " + a + "; exec sleep 60"}},
		{"b", b, fileReady, []string{"sh", "-c", "sleep 2; touch " + b + "; exec sleep 60"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if took > 3500*time.Millisecond {
		t.Errorf("two emulators of 2s each took %s to start", took)
	}
}

func TestDefaultStartTimeout(t *testing.T) {
	var c Config
	c.defaults()
	if c.StartTimeout < 5*time.Minute {
		t.Errorf("default start timeout %s: a first start on a loaded machine has taken over 2 minutes", c.StartTimeout)
	}
}

type nilWriter struct{}

func (nilWriter) Write(b []byte) (int, error) { return len(b), nil }
