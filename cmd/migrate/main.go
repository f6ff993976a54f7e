// Command migrate brings what earlier versions stored in Firestore to this
// version's layout, once, before this version serves (the server refuses
// a session whose context is in an earlier layout, rather than read it as
// empty): contexts kept in an earlier layout become windows, units of
// search get their session's title, and each user's list of deleted and
// archived sessions is made anew from their sessions, and the documents of
// users whose uid is not a safe id move from the key earlier versions gave
// them to today's. It reads the same
// configuration as the server, is idempotent (run it again and it changes
// nothing) and resumable (-after the session id it last reported), and may
// run beside a serving version.
//
//	migrate [-after SESSION_ID] [-v]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/chatmemory/backend/cmd/internal/command"
)

func main() { command.Main(run) }

// run is the command, apart from the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	after := fs.String("after", "", "start after this session id (the last one a cut-off run reported)")
	verbose := fs.Bool("v", false, "log as the deployed function does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "migrate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	backend, code := command.Open(ctx, "migrate", getenv, *verbose, stderr)
	if backend == nil {
		return code
	}
	defer backend.Close()
	rep, err := backend.Migrate(ctx, *after, command.Progress{Name: "migrate", W: stderr})
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if err != nil {
		fmt.Fprintf(stderr, "migrate: %v; resume with -after %q\n", err, rep.After)
		return 1
	}
	return 0
}
