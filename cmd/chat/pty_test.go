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
	api := serveOffline(t)
	email := fmt.Sprintf("pty-%d@example.com", time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-api", api, "-auth", host, "-email", email, "-password", "pty-password")
	cmd.Env = append(os.Environ(), "CHAT_CLIENT_UNDER_TEST=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	defer cmd.Process.Kill()
	out := &screen{}
	go io.Copy(noCR{out}, tty) // the terminal ends lines with \r\n
	seen := 0
	expect := func(want string) {
		t.Helper()
		out.waitFor(t, seen, want)
		seen += strings.Index(out.String()[seen:], want) + len(want)
	}
	typed := func(s string) {
		t.Helper()
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	expect("you> ")
	typed("/edit\r")
	expect("usage: /edit TEXT")

	typed("first line of a paragraph\rsecond line\rthird line\r") // a paste: the lines at once
	expect("assistant> You said: first line of a paragraph\nsecond line\nthird line")
	expect("(replies come from the server's offline stand-in model")
	expect("(session ")
	session := regexp.MustCompile(`\(session ([A-Za-z0-9_-]+)\)`).FindStringSubmatch(out.String())[1]
	expect("you> ")

	typed(strings.Repeat("a long question about streaming replies ", 5) + "\r")
	expect("assistant> You said: a long")
	typed("\x03")
	expect("[stopped]")
	expect("you> ")

	typed("/tool lookup_order\r")
	expect("you> ")
	typed("where is my order? use lookup_order\r")
	expect(`(calls lookup_order {"text":"where is my order? use lookup_order"})`)
	expect("result of lookup_order> ")
	typed("shipped Monday\r")
	expect("Your tools answered: shipped Monday")
	expect("you> ")

	typed("\x03")
	expect("Ctrl-C again")
	typed("\x03")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the client left with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Ctrl-C twice did not leave:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "offline stand-in model"); n != 1 {
		t.Errorf("the stand-in was announced %d times", n)
	}
	checkStored(t, api, host, email, session)
}

// noCR writes to w what it is given without carriage returns.
type noCR struct{ w io.Writer }

func (n noCR) Write(p []byte) (int, error) {
	_, err := n.w.Write([]byte(strings.ReplaceAll(string(p), "\r", "")))
	return len(p), err
}

// serveOffline starts the API on the in-process store, with the offline
// stand-in streaming a chunk every 60 ms and tokens checked by the Auth
// emulator, and returns its URL.
func serveOffline(t *testing.T) string {
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
	backend := app.New(cfg, app.Deps{Store: inprocdb.New(), Model: llm.Offline{Pace: 60 * time.Millisecond},
		Auth: &functions.FirebaseVerifier{Client: authClient}, Tokens: storetest.Tokens(t), Log: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(backend.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
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
