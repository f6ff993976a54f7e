package main

import (
	"context"
	"fmt"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"github.com/creack/pty"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/emulator"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/storetest"
)

// TestMain runs the client itself when a test starts this binary as the
// client (in a pseudo-terminal).
func TestMain(m *testing.M) {
	if os.Getenv("CHAT_CLIENT_UNDER_TEST") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestInPseudoTerminal drives the client as a user does, in a
// pseudo-terminal, against the API on the in-process store with the
// offline stand-in streaming at its pace, signed in through the Auth
// emulator: /edit without text gives its usage; a pasted paragraph is one
// message; Ctrl-C while the reply streams stops it on the server (stored
// as stopped) and returns to the prompt; a tool call is shown by name and
// arguments and answered by hand; Ctrl-C twice at the prompt leaves.
func TestInPseudoTerminal(t *testing.T) {
	host := emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	api, _ := serveOffline(t)
	email := fmt.Sprintf("pty-%d@example.com", time.Now().UnixNano())
	c := startClient(t, api, host, email)
	c.expect("you> ")
	c.typed("/edit\r")
	c.expect("usage: /edit TEXT")

	c.typed("first line of a paragraph\rsecond line\rthird line\r") // a paste: the lines at once
	c.expect("assistant> You said: first line of a paragraph\nsecond line\nthird line")
	c.expect("(replies come from the server's offline stand-in model")
	c.expect("(session ")
	session := regexp.MustCompile(`\(session ([A-Za-z0-9_-]+)\)`).FindStringSubmatch(c.out.String())[1]
	c.expect("you> ")

	c.typed(strings.Repeat("a long question about streaming replies ", 5) + "\r")
	c.expect("assistant> You said: a long")
	c.typed("\x03")
	c.expect("[stopped]")
	c.expect("you> ")

	c.typed("/tool lookup_order\r")
	c.expect("you> ")
	c.typed("where is my order? use lookup_order\r")
	c.expect(`(calls lookup_order {"text":"where is my order? use lookup_order"})`)
	c.expect("result of lookup_order> ")
	c.typed("shipped Monday\r")
	c.expect("Your tools answered: shipped Monday")
	c.expect("you> ")

	c.typed("\x03")
	c.expect("Ctrl-C again")
	c.typed("\x03")
	c.exits()
	if n := strings.Count(c.out.String(), "offline stand-in model"); n != 1 {
		t.Errorf("the stand-in was announced %d times", n)
	}
	checkStored(t, api, host, email, session)
}

// ptyClient is the client running in a pseudo-terminal: what it shows,
// and what is typed into it.
type ptyClient struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	out  *screen
	seen int // how much of out was expected so far
}

// startClient starts this test binary as the client, signed in as email,
// in a pseudo-terminal of 40 rows of 200 columns.
func startClient(t *testing.T, api, host, email string) *ptyClient {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-api", api, "-auth", host, "-email", email, "-password", "pty-password")
	cmd.Env = append(os.Environ(), "CHAT_CLIENT_UNDER_TEST=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close(); cmd.Process.Kill() })
	c := &ptyClient{t: t, cmd: cmd, tty: tty, out: &screen{}}
	go io.Copy(noCR{c.out}, tty) // the terminal ends lines with \r\n
	return c
}

// expect waits for want on the screen after what was expected before.
func (c *ptyClient) expect(want string) {
	c.t.Helper()
	c.out.waitFor(c.t, c.seen, want)
	c.seen += strings.Index(c.out.String()[c.seen:], want) + len(want)
}

// typed types s at once (several lines of it are a paste).
func (c *ptyClient) typed(s string) {
	c.t.Helper()
	if _, err := c.tty.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// typedByHand types each line of lines in turn, a pause between them.
func (c *ptyClient) typedByHand(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		c.typed(l + "\r")
		time.Sleep(10 * pasteGap)
	}
}

// exits waits for the client to leave, without an error.
func (c *ptyClient) exits() {
	c.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			c.t.Errorf("the client left with %v", err)
		}
	case <-time.After(5 * time.Second):
		c.t.Fatalf("the client did not leave:\n%s", c.out.String())
	}
}

// noCR writes to w what it is given without carriage returns.
type noCR struct{ w io.Writer }

func (n noCR) Write(p []byte) (int, error) {
	_, err := n.w.Write([]byte(strings.ReplaceAll(string(p), "\r", "")))
	return len(p), err
}

// serveOffline starts the API on the in-process store, with the offline
// stand-in streaming a chunk every 60 ms, search on its embeddings, and
// tokens checked by the Auth emulator through a clock the test can move;
// it returns the API's URL and that check.
func serveOffline(t *testing.T) (string, *expiringVerifier) {
	t.Helper()
	ctx := context.Background()
	fb, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: emulator.DefaultProjectID})
	if err != nil {
		t.Fatal(err)
	}
	authClient, err := fb.Auth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{Backend: "inprocess", ProjectID: emulator.DefaultProjectID, ChatModel: llm.OfflineModel,
		SystemPrompt: "You are a test assistant.", MaxBodyBytes: 64 << 10, MaxSessionMessages: 1000,
		TurnsPerMinute: chat.MaxTurnsPerMinute, TokensPerDay: 10_000_000, ModelTimeout: 10 * time.Second,
		DraftInterval: 100 * time.Millisecond}
	verifier := &expiringVerifier{inner: &functions.FirebaseVerifier{Client: authClient}, client: authClient}
	backend := app.New(cfg, app.Deps{Store: inprocdb.New(), Model: llm.Offline{Pace: 60 * time.Millisecond}, Embedder: llm.Lexical{},
		Auth: verifier, Tokens: storetest.Tokens(t), Log: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(backend.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, verifier
}

// checkStored reads the session as the user: the paste is one message, the
// stopped reply is stored as stopped and cut short.
func checkStored(t *testing.T, api, host, email, session string) {
	t.Helper()
	acct, err := signIn(context.Background(), host, email, "pty-password")
	if err != nil {
		t.Fatal(err)
	}
	c := &client{base: api, auth: acct}
	var page struct {
		Messages []struct {
			Role, Content string
			Metadata      struct{ FinishReason string }
		}
	}
	if err := c.getJSON(context.Background(), "/sessions/"+session+"/messages?limit=50", &page); err != nil {
		t.Fatal(err)
	}
	var users, stopped int
	for _, m := range page.Messages {
		if m.Role == "user" {
			users++
		}
		if m.Metadata.FinishReason == "stopped" {
			stopped++
			if strings.Count(m.Content, "streaming replies") == 5 {
				t.Errorf("the stopped reply is whole: %q", m.Content)
			}
		}
	}
	if first := page.Messages[0]; first.Content != "first line of a paragraph\nsecond line\nthird line" {
		t.Errorf("the paste was sent as %q", first.Content)
	}
	if users != 3 || stopped != 1 {
		t.Errorf("%d user messages (want 3: the paste, the question, the tool question) and %d stopped replies (want 1): %+v", users, stopped, page.Messages)
	}
}
