// Command chatpath records the code one POST /chat runs, from the handler
// down to the store, for `make chatpath` (see docs/architecture.md,
// "Following a turn"). Built with -cover -covermode=atomic -coverpkg=./...
// and run beside the emulators, it opens the backend as the server does
// (Firestore, the offline stand-in model; embeddings and long-term memory
// off: a plain turn), signs a user up, warms a session up with a first
// turn (and its after-turn job), clears the coverage counters, sends a
// second turn, waits for its after-turn job, and writes the counters to -out; `go tool covdata func`
// then lists what ran.
//
// With -paths, it reads that listing instead and counts, on the module's
// call graph, the functions that ran from the handler and those on a call
// from the handler to Firestore's client, with their files, folders and
// climbs: calls to a function declared higher in the same file.
//
//	chatpath -out DIR
//	chatpath -paths LISTING [-each]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/coverage"
	"sync/atomic"
	"time"

	"github.com/chatmemory/backend/app"
)

func main() {
	out := flag.String("out", "", "the folder to write the coverage counters to")
	paths := flag.String("paths", "", "instead of a turn: count the calls from the handler to the store among the functions this listing (`go tool covdata func`) says ran")
	root := flag.String("root", "functions/chat.go:*App.chat", "with -paths: the handler, as file:function")
	each := flag.Bool("each", false, "with -paths: list each function and what it calls")
	flag.Parse()
	if *paths != "" {
		if err := countPaths(os.Stdout, *paths, *root, *each); err != nil {
			fmt.Fprintln(os.Stderr, "chatpath:", err)
			os.Exit(1)
		}
		return
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "chatpath: -out is required")
		os.Exit(2)
	}
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "chatpath:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	env := map[string]string{"EMBEDDINGS": "off", "LONG_TERM_MEMORY": "off", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
	cfg, err := app.ConfigFromEnv(func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
	if err != nil {
		return err
	}
	backend, err := app.Open(ctx, cfg, io.Discard)
	if err != nil {
		return err
	}
	defer backend.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var done finished
	srv := &http.Server{Handler: done.counting(backend.Handler())}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	token, err := signUp()
	if err != nil {
		return err
	}
	var first struct {
		SessionID string `json:"sessionId"`
	}
	if err := post(base+"/chat", token, map[string]any{"message": "hello"}, &first); err != nil {
		return err
	}
	if err := done.wait(1); err != nil {
		return err
	}
	// The first turn's job (its title) runs after its reply: done before
	// the counters are cleared, or the second turn would now and then find
	// it still pending and run more.
	backend.AfterTurn.Wait()
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("build it with -cover -covermode=atomic: %w", err)
	}
	if err := post(base+"/chat", token, map[string]any{"sessionId": first.SessionID, "message": "and again"}, nil); err != nil {
		return err
	}
	if err := done.wait(2); err != nil {
		return err
	}
	backend.AfterTurn.Wait() // the second turn's job
	if err := coverage.WriteMetaDir(out); err != nil {
		return err
	}
	return coverage.WriteCountersDir(out)
}

// signUp makes an account in the Auth emulator and returns its ID token.
func signUp() (string, error) {
	url := "http://" + os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") + "/identitytoolkit.googleapis.com/v1/accounts:signUp?key=chatpath"
	var out struct {
		IDToken string `json:"idToken"`
	}
	email := fmt.Sprintf("chatpath-%d@example.com", time.Now().UnixNano())
	err := post(url, "", map[string]any{"email": email, "password": "password123", "returnSecureToken": true}, &out)
	if err == nil && out.IDToken == "" {
		err = fmt.Errorf("the Auth emulator gave no token")
	}
	return out.IDToken, err
}

// post sends body as JSON and decodes a 200's answer into v (if not nil).
func post(url, token string, body, v any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %s %s", url, resp.Status, got)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(got, v)
}

// finished counts the requests the server finished (a turn's handler
// returns at its reply; its job runs after it, on the backend's AfterTurn).
type finished struct{ n atomic.Int64 }

func (f *finished) counting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer f.n.Add(1)
		next.ServeHTTP(w, r)
	})
}

// wait waits until n requests have finished.
func (f *finished) wait(n int64) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if f.n.Load() >= n {
			return nil
		}
	}
	return fmt.Errorf("the server finished fewer than %d requests in 30 s", n)
}
