// Package emulatortest gives tests a Firestore client on the emulator, in a
// project of their own that is wiped when the test ends. It is imported by
// tests only.
package emulatortest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
)

// Firestore returns a client for a new project on the Firestore emulator;
// the project's data is deleted and the client closed when tb ends.
func Firestore(tb testing.TB) (*firestore.Client, string) {
	tb.Helper()
	return FirestoreWith(tb, func(ctx context.Context, project string) (*firestore.Client, error) {
		return firestore.NewClient(ctx, project)
	})
}

// FirestoreWith is Firestore with a client made by dial (an instrumented
// one, say).
func FirestoreWith(tb testing.TB, dial func(ctx context.Context, project string) (*firestore.Client, error)) (*firestore.Client, string) {
	tb.Helper()
	addr := Require(tb, "FIRESTORE_EMULATOR_HOST")
	project := ProjectID()
	client, err := dial(context.Background(), project)
	if err != nil {
		tb.Fatalf("firestore client: %v", err)
	}
	tb.Cleanup(func() {
		client.Close()
		Wipe(tb, addr, project)
	})
	return client, project
}

// ProjectID returns a fresh emulator project id, so tests never share data;
// a demo- one, the only kind a server trusting the Auth emulator accepts.
func ProjectID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return "demo-test-" + string(b)
}

// Wipe deletes every document of project on the emulator at addr.
func Wipe(tb testing.TB, addr, project string) {
	url := fmt.Sprintf("http://%s/emulator/v1/projects/%s/databases/(default)/documents", addr, project)
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		tb.Logf("wipe %s: %v", project, err)
		return
	}
	resp.Body.Close()
}

// Getenv requires both emulators and returns the environment a command
// under test sees: the emulators' hosts, project, and vars (name, value,
// name, value…); nothing else of the process's.
func Getenv(tb testing.TB, project string, vars ...string) func(string) string {
	tb.Helper()
	set := map[string]string{
		"FIRESTORE_EMULATOR_HOST":     Require(tb, "FIRESTORE_EMULATOR_HOST"),
		"FIREBASE_AUTH_EMULATOR_HOST": Require(tb, "FIREBASE_AUTH_EMULATOR_HOST"),
		"GOOGLE_CLOUD_PROJECT":        project,
	}
	for i := 0; i+1 < len(vars); i += 2 {
		set[vars[i]] = vars[i+1]
	}
	return func(k string) string { return set[k] }
}

// Require returns the emulator's address from env, or ends the test: under
// CI=true a missing or silent emulator fails the test, elsewhere it skips
// (run `make test` to get one).
func Require(tb testing.TB, env string) string {
	tb.Helper()
	addr := os.Getenv(env)
	problem := ""
	if addr == "" {
		problem = env + " is not set"
	} else if resp, err := http.Get("http://" + addr + "/"); err != nil {
		problem = fmt.Sprintf("%s=%s does not answer: %v", env, addr, err)
	} else {
		resp.Body.Close()
	}
	if problem == "" {
		return addr
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("emulator needed: %s (CI=true: failing, not skipping)", problem)
	}
	tb.Skipf("emulator needed: %s; run `make test`", problem)
	return ""
}
