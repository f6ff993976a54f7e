package main

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// screen is output written by the client and read by the test meanwhile.
type screen struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the screen shows want after its first skip bytes.
func (s *screen) waitFor(t *testing.T, skip int, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if out := s.String(); len(out) >= skip && strings.Contains(out[skip:], want) {
			return
		}
	}
	t.Fatalf("the screen never showed %q:\n%s", want, s.String())
}

// live is a client on the fake API, typed into as the test goes.
func live(t *testing.T, gap time.Duration) (api *fakeAPI, lines chan string, intr chan struct{}, out *screen, done chan struct{}) {
	api = newFakeAPI()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	lines, intr, out, done = make(chan string), make(chan struct{}), &screen{}, make(chan struct{})
	term := &terminal{api: &client{base: srv.URL, auth: fixedToken{}}, in: input{lines: lines, intr: intr, gap: gap}, out: out, errs: out}
	go func() { defer close(done); term.run() }()
	return api, lines, intr, out, done
}

// TestCtrlC: Ctrl-C while a reply streams asks the server to stop that
// reply and returns to the prompt at once; a second Ctrl-C there leaves.
// Once at the prompt only says how to leave.
func TestCtrlC(t *testing.T) {
	api, lines, intr, out, done := live(t, 0)
	intr <- struct{}{}
	out.waitFor(t, 0, "(Ctrl-C again, or /quit, to leave)")
	lines <- "slow"
	out.waitFor(t, 0, "word2")
	start := time.Now()
	intr <- struct{}{}
	select {
	case <-api.stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("the reply was not stopped on the server")
	}
	mark := strings.Index(out.String(), "word2")
	out.waitFor(t, mark, "[stopped]")
	out.waitFor(t, strings.Index(out.String(), "[stopped]"), "\nyou> ")
	if took := time.Since(start); took > time.Second {
		t.Errorf("back at the prompt %v after Ctrl-C", took)
	}
	intr <- struct{}{}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("a second Ctrl-C did not leave")
	}
}

// TestPasteByTiming: on a terminal that does not bracket pastes, lines
// arriving together are one message; a line typed later is another.
func TestPasteByTiming(t *testing.T) {
	api, lines, _, out, _ := live(t, pasteGap)
	go func() {
		for _, l := range []string{"first line of a paragraph", "second line", "third line"} {
			lines <- l
		}
	}()
	out.waitFor(t, 0, "assistant> hello")
	time.Sleep(5 * pasteGap)
	lines <- "a message typed later"
	out.waitFor(t, strings.Index(out.String(), "hello")+1, "assistant> hello")
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bodies) != 2 || api.bodies[0]["message"] != "first line of a paragraph\nsecond line\nthird line" || api.bodies[1]["message"] != "a message typed later" {
		t.Errorf("sent %v", api.bodies)
	}
}
