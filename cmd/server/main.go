// Command server serves the backend's endpoints locally, on one port under
// the same paths as the deployed function. Configuration comes from the
// environment (see README.md); `make dev` starts it next to the emulators.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/chatmemory/backend/functions"
)

func main() {
	addr := flag.String("addr", "", "listen address (default 127.0.0.1:$PORT, PORT defaulting to 8090)")
	flag.Parse()
	if *addr == "" {
		port := os.Getenv("PORT")
		if port == "" {
			port = "8090"
		}
		*addr = "127.0.0.1:" + port
	}
	cfg, err := functions.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := functions.Open(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
	defer app.Close()

	srv := &http.Server{Addr: *addr, Handler: app.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	banner(cfg, *addr)
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

func banner(cfg functions.Config, addr string) {
	w := os.Stderr
	fmt.Fprintf(w, "\n  Chat memory backend listening on http://%s  (storage: %s, project: %s)\n", addr, cfg.Backend, cfg.ProjectID)
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
