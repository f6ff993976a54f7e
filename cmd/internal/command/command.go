// Package command holds what the backend's commands share: opening the
// backend with the server's configuration, and their progress lines.
package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/chatmemory/backend/app"
)

// Main runs a command's run with the process's arguments, environment
// and output, its context cancelled by Ctrl-C or SIGTERM, and exits with
// the code run returns.
func Main(run func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Open opens the backend the environment configures, as the server does,
// logging as the deployed function does when verbose. When it cannot, it
// says why under the command's name and returns the exit code: 2 for a
// configuration it refuses, 1 for a backend it cannot open.
func Open(ctx context.Context, name string, getenv func(string) string, verbose bool, stderr io.Writer) (*app.App, int) {
	cfg, err := app.ConfigFromEnv(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, 2
	}
	var logw io.Writer = io.Discard
	if verbose {
		logw = stderr
	}
	backend, err := app.Open(ctx, cfg, logw)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, 1
	}
	return backend, 0
}

// Progress writes each line it is given after the command's name.
type Progress struct {
	Name string
	W    io.Writer
}

func (p Progress) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(p.W, "%s: %s", p.Name, b); err != nil {
		return 0, err
	}
	return len(b), nil
}
