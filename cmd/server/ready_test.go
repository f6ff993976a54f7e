package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatmemory/backend/emulator/emulatortest"
)

// TestReadyOnlyWhenHealthy: while storage does not answer (a cold
// emulator: connections accepted, nothing answered), the server answers
// /healthz 503 and says nothing of being ready; once storage answers, it
// prints its banner, and /healthz answers 200.
func TestReadyOnlyWhenHealthy(t *testing.T) {
	target := emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	proxy := holdingProxy(t, target)
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	port := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+port, "FIRESTORE_EMULATOR_HOST="+proxy.addr, "STORAGE_BACKEND=firestore",
		"GOOGLE_CLOUD_PROJECT="+emulatortest.ProjectID(), "ID_SECRET=0123456789abcdef0123456789abcdef", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "http://127.0.0.1:" + port + "/healthz"

	silent := time.Now().Add(60 * time.Second)
	for unhealthy := 0; unhealthy < 2; {
		if time.Now().After(silent) {
			t.Fatalf("/healthz never answered 503 with storage silent:\n%s", stderr.String())
		}
		switch status := get(url); {
		case status == http.StatusServiceUnavailable:
			unhealthy++
		case status != 0:
			t.Fatalf("/healthz answered %d with storage silent, want 503", status)
		}
		if strings.Contains(stderr.String(), "listening on") {
			t.Fatalf("the server said it was ready while /healthz answers 503:\n%s", stderr.String())
		}
	}

	proxy.open()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("no banner 60s after storage answered:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status := get(url); status != http.StatusOK {
		t.Fatalf("after the banner /healthz answered %d, want 200", status)
	}
}

// holdingProxy forwards connections to target, each only once open is
// called: until then a client connects, and nothing answers.
type proxy struct {
	addr   string
	gate   chan struct{}
	opened sync.Once
}

func holdingProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &proxy{addr: ln.Addr().String(), gate: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c, target)
		}
	}()
	return p
}

func (p *proxy) open() { p.opened.Do(func() { close(p.gate) }) }

func (p *proxy) forward(c net.Conn, target string) {
	defer c.Close()
	<-p.gate
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go io.Copy(up, c)
	io.Copy(c, up)
}

func get(url string) int {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
