// Command embed backfills the recall index: it embeds every exchange of
// every active and archived session that is not embedded yet with the
// configured model (history stored before embeddings were on, or embedded
// by another model), with the same configuration as the server. It is
// idempotent (run it again and it embeds nothing), resumable (-after the
// session id it last reported) and rate-limited (-rate embedding requests
// a second, each of up to -batch exchanges). The embeddings are the
// operator's cost: they are not charged to users' daily tokens.
//
//	embed [-after SESSION_ID] [-rate 5] [-batch 32]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/cmd/internal/command"
)

func main() { command.Main(run) }

// run is the command, apart from the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	after := fs.String("after", "", "start after this session id (the last one a cut-off run reported)")
	rate := fs.Float64("rate", 5, "embedding requests a second, at most")
	batch := fs.Int("batch", 32, "exchanges per embedding request (1 to 256)")
	verbose := fs.Bool("v", false, "log as the deployed function does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *rate <= 0 || *batch < 1 || *batch > 256 {
		fmt.Fprintln(stderr, "embed: -rate must be above 0 and -batch from 1 to 256")
		return 2
	}
	backend, code := command.Open(ctx, "embed", getenv, *verbose, stderr)
	if backend == nil {
		return code
	}
	defer backend.Close()
	rep, err := backend.Backfill(ctx, *after, *batch, *rate, command.Progress{Name: "embed", W: stderr})
	if errors.Is(err, app.ErrEmbeddingsOff) {
		fmt.Fprintln(stderr, "embed:", err)
		return 2
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintln(stdout, string(out))
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "embed: %v; resume with -after %q\n", err, rep.After)
		return 1
	case rep.Failed > 0:
		fmt.Fprintf(stderr, "embed: %d exchanges failed; run it again to retry them\n", rep.Failed)
		return 1
	}
	return 0
}
