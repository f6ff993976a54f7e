// Command server serves the backend's endpoints locally, on one port under
// the same paths as the deployed function. Configuration comes from the
// environment (see README.md); `make dev` starts it next to the emulators.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/functions"
)

func main() {
	addr := flag.String("addr", "", "listen address (default 127.0.0.1:$PORT, PORT defaulting to 8090)")
	web := flag.String("web", "", "also serve the web app from this folder (index.html, dist/) with its /config.json")
	flag.Parse()
	if *addr == "" {
		port := os.Getenv("PORT")
		if port == "" {
			port = "8090"
		}
		*addr = "127.0.0.1:" + port
	}
	cfg, err := app.ConfigFromEnv(os.Getenv)
	if err == nil && cfg.IDSecret == "" {
		cfg.IDSecret, err = localIDSecret()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	}
	// The port first: a second server fails here, before saying anything
	// else, and the banner below is true when it is printed.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "server: cannot listen on %s (is another server, or another `make dev`, running? set PORT to use another port): %v\n", *addr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	backend, err := app.Open(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
	defer backend.Close()

	handler := backend.Handler()
	if *web != "" {
		handler = withWebApp(handler, backend.Edge.APIPrefixes(), *web, cfg)
	}
	srv := functions.NewServer(*addr, handler)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go announce(ctx, cfg, *addr, *web != "")
	select {
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "server:", err)
	}
}

// announce prints the banner once the server is ready: when /healthz
// answers 200, so the first request is answered (a cold emulator's storage
// can take seconds).
func announce(ctx context.Context, cfg app.Config, addr string, web bool) {
	if waitHealthy(ctx, "http://"+addr+"/healthz", os.Stderr) {
		banner(cfg, addr, web)
	}
}

// waitHealthy polls url until it answers 200 (true) or ctx ends (false),
// saying every 10 seconds that storage does not answer yet.
func waitHealthy(ctx context.Context, url string, w io.Writer) bool {
	client := &http.Client{Timeout: 5 * time.Second}
	start, said := time.Now(), time.Now()
	for {
		status := healthStatus(ctx, client, url)
		if status == http.StatusOK {
			return true
		}
		if time.Since(said) >= 10*time.Second {
			fmt.Fprintf(w, "server: waiting for storage: /healthz answers %s after %s\n", orDefault(http.StatusText(status), "nothing"), time.Since(start).Round(time.Second))
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// healthStatus is the status url answers (0 for none).
func healthStatus(ctx context.Context, client *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// localIDSecret is the secret ids are derived under on this machine when
// ID_SECRET is not set: made once and kept in the user's configuration
// folder, so keyed retries find their turns across restarts.
func localIDSecret() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("ID_SECRET is not set and there is no folder to keep one in: %w", err)
	}
	path := filepath.Join(dir, "chatmemory", "id-secret")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 32)
	rand.Read(b)
	secret := hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", err
	}
	return secret, nil
}

func banner(cfg app.Config, addr string, web bool) {
	w := os.Stderr
	fmt.Fprintf(w, "\n  Chat memory backend listening on http://%s  (storage: %s, project: %s)\n", addr, cfg.Backend, cfg.ProjectID)
	if web {
		fmt.Fprintf(w, "\n  Web app:                http://%s/\n", addr)
	}
	if cfg.OfflineModel() {
		fmt.Fprintln(w, "\n  !!! OFFLINE MODEL: no OPENAI_API_KEY or OPENAI_BASE_URL, so replies come from a")
		fmt.Fprintln(w, "  !!! deterministic stand-in (stored with model \"offline-stand-in\"), not a real model.")
	} else {
		fmt.Fprintf(w, "\n  Model: %s via %s\n", cfg.ChatModel, orDefault(cfg.OpenAIBaseURL, "OpenAI"))
	}
	if cfg.AuthEmulator != "" {
		fmt.Fprintf(w, `
  Chat in the terminal:   go run ./cmd/chat -api http://%[1]s
  Or with curl:
    TOKEN=$(curl -s 'http://%[2]s/identitytoolkit.googleapis.com/v1/accounts:signUp?key=any' \
      -H 'Content-Type: application/json' \
      -d '{"email":"me-'$RANDOM'@example.com","password":"secret123","returnSecureToken":true}' \
      | node -pe 'JSON.parse(require("fs").readFileSync(0)).idToken')
    curl -s http://%[1]s/chat -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: application/json' -d '{"message":"Hello!"}'

`, addr, cfg.AuthEmulator)
	}
}

// withWebApp serves the web app's files and its configuration beside the
// API: the API's paths go to the API, everything else to the files. Local
// runs only: deployed, the app is hosted apart (Firebase Hosting, say).
func withWebApp(api http.Handler, apiPrefixes []string, dir string, cfg app.Config) http.Handler {
	files := http.FileServer(http.Dir(dir))
	config := map[string]any{
		"apiBase":  "",
		"firebase": map[string]string{"apiKey": "demo-key", "projectId": cfg.ProjectID, "authDomain": cfg.ProjectID + ".firebaseapp.com"},
	}
	if cfg.AuthEmulator != "" {
		config["authEmulator"] = "http://" + cfg.AuthEmulator
	}
	if cfg.FirestoreEmulator != "" {
		config["firestoreEmulator"] = cfg.FirestoreEmulator
	}
	body, _ := json.Marshal(config)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/config.json":
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		case hasPrefix(r.URL.Path, apiPrefixes):
			api.ServeHTTP(w, r)
		case r.URL.Path != "/" && !exists(dir, r.URL.Path):
			// Neither the API's nor a file: answered as the API answers
			// what it does not know.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"not_found","message":"no such endpoint or file"}}`+"\n")
		default:
			files.ServeHTTP(w, r)
		}
	})
}

// exists reports whether the URL path names a file or folder under dir.
func exists(dir, urlPath string) bool {
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+urlPath))))
	return err == nil
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
