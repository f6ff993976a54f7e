// Command emulators starts the Firestore and Auth emulators (reusing any that
// already answer), then either runs a command with the environment pointing
// at them and stops what it started when the command ends, or, without a
// command, runs until interrupted.
//
//	emulators [-v] [-- command args...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/chatmemory/backend/emulator"
)

func main() {
	os.Exit(run())
}

func run() int {
	verbose := flag.Bool("v", false, "show the emulators' own output")
	dir := flag.String("dir", ".", "the project folder (firebase.json, firestore.rules, node_modules)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var logw io.Writer = io.Discard
	if *verbose {
		logw = os.Stderr
	}
	fmt.Fprintln(os.Stderr, "emulators: starting Firestore and Auth emulators…")
	emus, err := emulator.Start(ctx, emulator.Config{Dir: *dir, Log: logw, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "emulators:", err)
		return 1
	}
	defer func() {
		if err := emus.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "emulators:", err)
		}
	}()
	for _, kv := range emus.Env() {
		fmt.Fprintln(os.Stderr, "emulators:", kv)
	}

	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "emulators: running; press Ctrl-C to stop")
		<-ctx.Done()
		return 0
	}
	return runCommand(ctx, flag.Args(), emus.Env())
}

// runCommand runs args with env added to its environment and returns its
// exit code; an interrupt of ctx is passed on to it, and a command that
// then ends by the signal has stopped cleanly.
func runCommand(ctx context.Context, args, env []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "emulators:", err)
		return 1
	}
	// Pass an interrupt on to the command and let it finish its own cleanup.
	go func() {
		<-ctx.Done()
		cmd.Process.Signal(os.Interrupt)
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.ExitCode() < 0 {
			if ctx.Err() != nil {
				return 0 // ended by the interrupt that stops us all (Ctrl-C): a clean stop
			}
			return 1
		}
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "emulators:", err)
		return 1
	}
}
