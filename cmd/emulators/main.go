// Command emulators starts the Firestore and Auth emulators (reusing any that
// already answer) and a Cloud Storage emulator in this process
// (fake-gcs-server, for attachments), then either runs a command with the
// environment pointing at them and stops what it started when the command
// ends, or, without a command, runs until interrupted.
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
	env, stopStorage, err := withStorage(ctx, emus.Env(), logw)
	if err != nil {
		fmt.Fprintln(os.Stderr, "emulators:", err)
		return 1
	}
	defer stopStorage()
	for _, kv := range env {
		fmt.Fprintln(os.Stderr, "emulators:", kv)
	}

	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "emulators: running; press Ctrl-C to stop")
		<-ctx.Done()
		return 0
	}
	return runCommand(ctx, flag.Args(), env)
}

// withStorage adds a Cloud Storage emulator to env: the one that answers
// on its default address already, or one started here on it (or, when
// that address is taken, on any free port).
func withStorage(ctx context.Context, env []string, logw io.Writer) ([]string, func(), error) {
	if emulator.StorageAnswers(ctx, emulator.DefaultStorageAddr) {
		return append(env, "STORAGE_EMULATOR_HOST="+emulator.DefaultStorageAddr), func() {}, nil
	}
	st, err := emulator.StartStorage(emulator.DefaultStorageAddr, logw)
	if err != nil {
		if st, err = emulator.StartStorage("127.0.0.1:0", logw); err != nil {
			return nil, nil, err
		}
	}
	return append(env, st.Env()...), st.Stop, nil
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
