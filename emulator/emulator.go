// Package emulator starts and stops the local Firebase emulators the backend
// runs against: the Cloud Firestore emulator (gcloud, with the repo's rules)
// and the Firebase Auth emulator (firebase-tools from the repo's npm lock
// file). It reuses an emulator that already answers and stops exactly what it
// started. It is for development and tests; no production code imports it.
package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults match firebase.json.
const (
	DefaultFirestoreAddr = "127.0.0.1:8080"
	DefaultAuthAddr      = "127.0.0.1:9099"
	DefaultProjectID     = "demo-chatmemory" // demo-* projects never reach Google
	// A first start on a loaded machine (the Auth emulator's first run, a
	// fresh `npm ci` still compiling beside it) has taken over two minutes.
	DefaultStartTimeout = 6 * time.Minute
)

// Config says where the emulators listen and where the project files are.
type Config struct {
	Dir           string        // holds firebase.json, firestore.rules and node_modules
	FirestoreAddr string        // host:port
	AuthAddr      string        // host:port; the Auth emulator reads its port from firebase.json
	ProjectID     string        // the project the Auth emulator serves
	Log           io.Writer     // emulator output; nil discards it
	Progress      io.Writer     // "still waiting for …" notes; nil discards them
	StartTimeout  time.Duration // per emulator; DefaultStartTimeout when 0
}

// Emulators are the running emulators, some perhaps started by someone else.
type Emulators struct {
	cfg     Config
	started []*process
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	tail *tail // its last lines, for saying why it is slow
	born time.Time
}

// Start makes sure both emulators answer, starting those that do not.
// Those it starts start at once, and each is waited on until it answers
// (at most StartTimeout); one that does not is named, with its last lines.
func Start(ctx context.Context, cfg Config) (*Emulators, error) {
	cfg.defaults()
	firebase := filepath.Join(cfg.Dir, "node_modules", ".bin", "firebase")
	return start(ctx, cfg, []emu{
		{"firestore", cfg.FirestoreAddr, firestoreReady, []string{"gcloud", "emulators", "firestore", "start",
			"--host-port=" + cfg.FirestoreAddr, "--rules=" + filepath.Join(cfg.Dir, "firestore.rules")}},
		{"auth", cfg.AuthAddr, authReady, []string{firebase, "emulators:start", "--only", "auth",
			"--project", cfg.ProjectID, "--config", filepath.Join(cfg.Dir, "firebase.json")}},
	})
}

// emu is one emulator: where it answers, how to tell, how to start it.
type emu struct {
	name  string
	addr  string
	ready func(context.Context, string) bool
	argv  []string
}

func start(ctx context.Context, cfg Config, emus []emu) (*Emulators, error) {
	e := &Emulators{cfg: cfg}
	var waits []func() error
	for _, m := range emus {
		if m.ready(ctx, m.addr) {
			fmt.Fprintf(cfg.Log, "emulator: %s already answers on %s; using it\n", m.name, m.addr)
			continue
		}
		p, err := e.spawn(m.name, m.argv)
		if err != nil {
			e.Stop()
			return nil, err
		}
		waits = append(waits, func() error { return waitReady(ctx, p, m, cfg) })
	}
	for _, wait := range waits {
		if err := wait(); err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

func (c *Config) defaults() {
	if c.FirestoreAddr == "" {
		c.FirestoreAddr = DefaultFirestoreAddr
	}
	if c.AuthAddr == "" {
		c.AuthAddr = DefaultAuthAddr
	}
	if c.ProjectID == "" {
		c.ProjectID = DefaultProjectID
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
}

func (e *Emulators) spawn(name string, argv []string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = e.cfg.Dir
	last := &tail{max: 15}
	out := io.MultiWriter(prefixed(e.cfg.Log, name), last) // one writer: exec copies both streams in one goroutine
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so Stop reaches the Java child of gcloud too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "NO_UPDATE_NOTIFIER=1", "FIREBASE_CLI_DISABLE_UPDATE_CHECK=true")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("emulator: start %s (%s): %w", name, argv[0], err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), tail: last, born: time.Now()}
	go func() { cmd.Wait(); close(p.done) }()
	e.started = append(e.started, p)
	return p, nil
}

// waitReady waits until m answers, its process exits, or cfg.StartTimeout
// passes since it started; every 30 seconds it says which emulator it is
// still waiting for.
func waitReady(ctx context.Context, p *process, m emu, cfg Config) error {
	start := p.born
	said := time.Now()
	for !m.ready(ctx, m.addr) {
		select {
		case <-p.done:
			return p.failed(fmt.Sprintf("exited (%v) before answering on %s", p.cmd.ProcessState, m.addr))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		waited := time.Since(start)
		if waited > cfg.StartTimeout {
			return p.failed(fmt.Sprintf("did not answer on %s within %s", m.addr, cfg.StartTimeout))
		}
		if time.Since(said) >= 30*time.Second {
			fmt.Fprintf(cfg.Progress, "emulator: still waiting for %s on %s (%s so far)\n", p.name, m.addr, waited.Round(time.Second))
			said = time.Now()
		}
	}
	fmt.Fprintf(cfg.Progress, "emulator: %s ready on %s after %s\n", m.name, m.addr, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// failed is the error that names the slow or failed process (its command
// and pid) and shows its last lines.
func (p *process) failed(what string) error {
	lines := p.tail.lines()
	shown := "  (it printed nothing)"
	if len(lines) > 0 {
		shown = "  " + strings.Join(lines, "\n  ")
	}
	return fmt.Errorf("emulator: %s (%s, pid %d) %s; its last lines:\n%s",
		p.name, filepath.Base(p.cmd.Path), p.cmd.Process.Pid, what, shown)
}

// Stop ends every emulator Start started, with its whole process group, and
// waits until each has exited, so its ports are free for the next run.
func (e *Emulators) Stop() error {
	var errs []error
	for i := len(e.started) - 1; i >= 0; i-- {
		p := e.started[i]
		pgid := p.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		// Children that outlived their parent (gcloud's Java) still hold the
		// group; make sure they are gone too.
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("emulator: stop %s: %w", p.name, err))
		}
	}
	e.started = nil
	return errors.Join(errs...)
}

// Env is the environment that points clients at these emulators.
func (e *Emulators) Env() []string {
	return []string{
		"FIRESTORE_EMULATOR_HOST=" + e.cfg.FirestoreAddr,
		"FIREBASE_AUTH_EMULATOR_HOST=" + e.cfg.AuthAddr,
		"GOOGLE_CLOUD_PROJECT=" + e.cfg.ProjectID,
	}
}

// firestoreReady: the emulator answers "Ok" on its root.
func firestoreReady(ctx context.Context, addr string) bool {
	code, body, err := get(ctx, "http://"+addr+"/")
	return err == nil && code == http.StatusOK && strings.TrimSpace(string(body)) == "Ok"
}

// authReady: the Auth emulator describes itself on its root.
func authReady(ctx context.Context, addr string) bool {
	code, body, err := get(ctx, "http://"+addr+"/")
	if err != nil || code != http.StatusOK {
		return false
	}
	var info struct {
		AuthEmulator struct {
			Ready bool `json:"ready"`
		} `json:"authEmulator"`
	}
	return json.Unmarshal(body, &info) == nil && info.AuthEmulator.Ready
}

var probe = &http.Client{Timeout: 2 * time.Second}

func get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := probe.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, body, err
}

// prefixed writes each line of output behind "[name] ".
func prefixed(w io.Writer, name string) io.Writer {
	if w == io.Discard {
		return w
	}
	return &prefixWriter{w: w, prefix: "[" + name + "] ", bol: true}
}

type prefixWriter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if p.bol {
			out = append(out, p.prefix...)
			p.bol = false
		}
		out = append(out, c)
		if c == '\n' {
			p.bol = true
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// tail keeps the last max lines written to it.
type tail struct {
	mu      sync.Mutex
	max     int
	done    []string
	partial []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range b {
		if c != '\n' {
			t.partial = append(t.partial, c)
			continue
		}
		t.done = append(t.done, strings.TrimRight(string(t.partial), "\r"))
		t.partial = t.partial[:0]
		if len(t.done) > t.max {
			t.done = t.done[1:]
		}
	}
	return len(b), nil
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.done...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	return out
}
