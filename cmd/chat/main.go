// Command chat is a terminal client for the backend: it signs in to the
// Auth emulator (creating the account on first use, refreshing its token
// before it expires) and chats, streaming each reply; Ctrl-C stops a reply
// on the server. A paste of several lines is one message. Tools declared
// with /tool are offered to the model; when a reply asks for calls, the
// client asks you for each result and sends them, which makes the tool
// loop easy to try by hand.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	api := flag.String("api", "http://127.0.0.1:8090", "the backend's base URL")
	authHost := flag.String("auth", envOr("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099"), "the Auth emulator's host:port")
	email := flag.String("email", "dev@example.com", "the account to sign in with (created on first use)")
	password := flag.String("password", "dev-password", "its password")
	session := flag.String("session", "", "continue this session instead of starting a new one")
	flag.Parse()

	ctx := context.Background()
	acct, err := signIn(ctx, *authHost, *email, *password)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
	in := input{lines: linesOf(os.Stdin), intr: interrupts()}
	if isTerminal(os.Stdin) {
		in.gap = pasteGap
		fmt.Print(pasteOn)
		defer fmt.Print(pasteOff)
	}
	fmt.Printf("Signed in as %s. Type a message, or /help for the commands.\n", *email)
	t := &terminal{api: &client{base: *api, auth: acct}, in: in, out: os.Stdout, errs: os.Stderr, session: *session, ctx: ctx}
	t.run()
}

// interrupts turns each Ctrl-C (SIGINT) into a value on the channel.
func interrupts() <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	out := make(chan struct{}, 1)
	go func() {
		for range sig {
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

// isTerminal reports whether f is a terminal (not a pipe or a file).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
