// Command chat is a terminal client for the backend: it signs in to the
// Auth emulator (creating the account on first use) and chats, streaming
// each reply. Tools declared with /tool are offered to the model; when a
// reply asks for calls, the client asks you for each result and sends
// them, which makes the tool loop easy to try by hand.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
)

func main() {
	api := flag.String("api", "http://127.0.0.1:8090", "the backend's base URL")
	authHost := flag.String("auth", envOr("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099"), "the Auth emulator's host:port")
	email := flag.String("email", "dev@example.com", "the account to sign in with (created on first use)")
	password := flag.String("password", "dev-password", "its password")
	session := flag.String("session", "", "continue this session instead of starting a new one")
	flag.Parse()

	token, err := signIn(*authHost, *email, *password)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
	fmt.Printf("Signed in as %s. Type a message, or /help for the commands.\n", *email)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 64<<10)
	t := &terminal{api: *api, token: token, in: in, out: os.Stdout, errs: os.Stderr, session: *session}
	t.run()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
