package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/kernel/errs"
)

// expiringVerifier checks ID tokens as the server does, on a clock the
// test can move past the expiry of the first token it saw (the one the
// client signed in with): from then on it refuses every token that
// expires by then as expired, as the server refuses an hour-old token.
type expiringVerifier struct {
	inner  functions.Verifier
	client *auth.Client

	mu        sync.Mutex
	firstExp  int64 // the first token's expiry (Unix seconds)
	now       int64 // the moved clock (Unix seconds); 0: not moved
	refused   int   // tokens refused as expired
	acceptedN int   // tokens accepted after the clock moved
}

func (v *expiringVerifier) Verify(ctx context.Context, idToken string) (string, error) {
	uid, err := v.inner.Verify(ctx, idToken)
	if err != nil {
		return "", err
	}
	tok, err := v.client.VerifyIDToken(ctx, idToken)
	if err != nil {
		return "", err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.firstExp == 0 {
		v.firstExp = tok.Expires
	}
	if v.now != 0 && tok.Expires <= v.now {
		v.refused++
		return "", errs.Errorf(errs.EUNAUTHENTICATED, "the ID token has expired")
	}
	if v.now != 0 {
		v.acceptedN++
	}
	return uid, nil
}

// expireFirst moves the clock to the first token's expiry.
func (v *expiringVerifier) expireFirst() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.now = v.firstExp
}

func (v *expiringVerifier) counts() (refused, accepted int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.refused, v.acceptedN
}

// TestCommandsInPseudoTerminal drives the client's commands in a
// pseudo-terminal against the API (in-process store, offline stand-in,
// the Auth emulator): usage for commands missing their argument; a message
// of several lines typed by hand between """ lines (one of them starting
// with a slash) is one message; /search finds it; /memory shows the
// memory; /export writes the account's data to a file; once the token the
// client signed in with has expired on the server's clock, the next
// message still goes through on a refreshed token; /archive archives the
// session and /delete deletes it (stored so); /quit leaves.
func TestCommandsInPseudoTerminal(t *testing.T) {
	host := emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	api, verifier := serveOffline(t)
	email := fmt.Sprintf("pty-commands-%d@example.com", time.Now().UnixNano())
	c := startClient(t, api, host, email)
	c.expect("you> ")
	for _, cmd := range []string{"/search", "/export", "/resume", "/tool"} {
		c.typedByHand(cmd)
		c.expect("usage: " + cmd + " ")
		c.expect("you> ")
	}

	c.typedByHand(`"""`, "Plan a trip to Lisbon in May", "/not a command but a line", `"""`)
	c.expect("assistant> You said: Plan a trip to Lisbon in May\n/not a command but a line")
	c.expect("(session ")
	session := regexp.MustCompile(`\(session ([A-Za-z0-9_-]+)\)`).FindStringSubmatch(c.out.String())[1]
	c.expect("you> ")

	c.typedByHand("/search lisbon trip")
	c.expect("  " + session + "  ")
	c.expect("Lisbon")
	c.expect("you> ")
	c.typedByHand("/memory")
	c.expect("memory is on")
	c.expect("you> ")
	export := filepath.Join(t.TempDir(), "mine.json")
	c.typedByHand("/export " + export)
	c.expect("bytes to " + export)
	c.expect("you> ")
	if b, err := os.ReadFile(export); err != nil || !strings.Contains(string(b), session) {
		t.Errorf("the export lacks session %s: %v\n%.300s", session, err, b)
	}

	// An hour on: the server refuses the token signed in with, the client
	// refreshes it and the message goes through.
	verifier.expireFirst()
	c.typedByHand("an hour later")
	c.expect("assistant> You said: an hour later")
	c.expect("you> ")
	if refused, accepted := verifier.counts(); refused == 0 || accepted == 0 {
		t.Errorf("after the expiry the server refused %d tokens and accepted %d (want a refusal, then a refreshed token)", refused, accepted)
	}

	c.typedByHand("/archive")
	c.expect("(session " + session + " archived")
	c.expect("you> ")
	checkStatus(t, api, host, email, session, "archived")
	c.typedByHand("/delete " + session)
	c.expect("(session " + session + " deleted")
	c.expect("you> ")
	checkStatus(t, api, host, email, session, "deleted")
	c.typedByHand("/quit")
	c.exits()
	if strings.Contains(c.out.String(), "chat: ") {
		t.Errorf("an error showed:\n%s", c.out.String())
	}
}

// checkStatus reads the session as the user: its status is want.
func checkStatus(t *testing.T, api, host, email, session, want string) {
	t.Helper()
	acct, err := signIn(context.Background(), host, email, "pty-password")
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ Status string }
	if err := (&client{base: api, auth: acct}).getJSON(context.Background(), "/sessions/"+session, &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != want {
		t.Errorf("session %s is %q, want %q", session, s.Status, want)
	}
}
