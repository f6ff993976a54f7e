// Command chat is a small terminal client: it signs a user in on the Firebase
// Auth emulator (signing them up on first use) and chats with the backend,
// printing the reply as it streams.
//
//	go run ./cmd/chat [-api http://127.0.0.1:8090] [-email you@example.com] [-session ID]
//
// Type a message and press Enter; /new starts a new session, /sessions
// lists yours, /resume ID continues one (showing its last messages),
// /regenerate answers your last message again, /edit TEXT sends your last
// message anew as TEXT (both keep the earlier version as a branch), /usage
// shows today's tokens against the limit and this session's totals, /quit
// ends.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
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
	fmt.Printf("Signed in as %s. Type a message; /new for a new session, /sessions, /resume ID, /regenerate, /edit TEXT, /usage, /quit to leave.\n", *email)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 64<<10)
	for {
		fmt.Print("\nyou> ")
		if !in.Scan() {
			return
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/quit":
			return
		case "/new":
			*session = ""
			fmt.Println("(next message starts a new session)")
			continue
		case "/sessions":
			if err := listSessions(*api, token); err != nil {
				fmt.Fprintln(os.Stderr, "chat:", err)
			}
			continue
		case "/usage":
			if err := showUsage(*api, token, *session); err != nil {
				fmt.Fprintln(os.Stderr, "chat:", err)
			}
			continue
		case "/regenerate":
			if err := regenerate(*api, token, *session); err != nil {
				fmt.Fprintln(os.Stderr, "\nchat:", err)
			}
			continue
		}
		if text, ok := strings.CutPrefix(line, "/edit "); ok {
			if err := edit(*api, token, *session, strings.TrimSpace(text)); err != nil {
				fmt.Fprintln(os.Stderr, "\nchat:", err)
			}
			continue
		}
		if id, ok := strings.CutPrefix(line, "/resume "); ok {
			id = strings.TrimSpace(id)
			if err := resume(*api, token, id); err != nil {
				fmt.Fprintln(os.Stderr, "chat:", err)
				continue
			}
			*session = id
			continue
		}
		if strings.HasPrefix(line, "/") {
			fmt.Println("(commands: /new, /sessions, /resume ID, /regenerate, /edit TEXT, /usage, /quit)")
			continue
		}
		id, err := turn(*api, token, map[string]any{"sessionId": *session, "message": line})
		if err != nil {
			fmt.Fprintln(os.Stderr, "\nchat:", err)
			continue
		}
		if id != *session {
			*session = id
			fmt.Printf("\n(session %s)", id)
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// signIn returns an ID token from the Auth emulator, signing up if needed.
func signIn(host, email, password string) (string, error) {
	body := map[string]any{"email": email, "password": password, "returnSecureToken": true}
	var out struct {
		IDToken string `json:"idToken"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, op := range []string{"signInWithPassword", "signUp"} {
		url := "http://" + host + "/identitytoolkit.googleapis.com/v1/accounts:" + op + "?key=any"
		if err := postJSON(url, "", body, &out); err != nil {
			return "", fmt.Errorf("auth emulator at %s: %w", host, err)
		}
		if out.IDToken != "" {
			return out.IDToken, nil
		}
		if !strings.HasPrefix(out.Error.Message, "EMAIL_NOT_FOUND") && !strings.HasPrefix(out.Error.Message, "INVALID_LOGIN_CREDENTIALS") {
			break
		}
	}
	return "", fmt.Errorf("sign-in failed: %s", out.Error.Message)
}

func postJSON(url, token string, body, out any) error {
	resp, err := post(url, token, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

func post(url, token string, body any) (*http.Response, error) {
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "text/event-stream")
	}
	return http.DefaultClient.Do(req)
}

// getJSON reads url as the signed-in user into out; an error status is an
// error with the API's message.
func getJSON(url, token string, out any) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// listSessions prints the user's active sessions, most recent first.
func listSessions(api, token string) error {
	var page struct {
		Sessions []struct {
			ID           string `json:"id"`
			Title        string `json:"title"`
			MessageCount int    `json:"messageCount"`
		} `json:"sessions"`
	}
	if err := getJSON(api+"/sessions?status=active&limit=20", token, &page); err != nil {
		return err
	}
	if len(page.Sessions) == 0 {
		fmt.Println("(no sessions yet)")
	}
	for _, s := range page.Sessions {
		fmt.Printf("  %s  %-40s %d messages\n", s.ID, s.Title, s.MessageCount)
	}
	return nil
}

// showUsage prints the user's standing against the limits, and the
// session's totals if there is one.
func showUsage(api, token, session string) error {
	type gauge struct {
		Used     int    `json:"used"`
		Limit    int    `json:"limit"`
		ResetsAt string `json:"resetsAt"`
	}
	var u struct {
		Day                     string `json:"day"`
		Tokens, Turns, Messages gauge
	}
	if err := getJSON(api+"/usage", token, &u); err != nil {
		return err
	}
	of := func(g gauge) string {
		if g.Limit == 0 {
			return fmt.Sprintf("%d (no limit)", g.Used)
		}
		return fmt.Sprintf("%d of %d (resets %s)", g.Used, g.Limit, g.ResetsAt)
	}
	fmt.Printf("  today (%s): tokens %s\n  this minute: turns %s, appended messages %s\n", u.Day, of(u.Tokens), of(u.Turns), of(u.Messages))
	if session == "" {
		return nil
	}
	var s struct {
		Title string `json:"title"`
		Usage struct {
			PromptTokens, CompletionTokens, Turns int
			LastModel                             string
		} `json:"usage"`
	}
	if err := getJSON(api+"/sessions/"+session, token, &s); err != nil {
		return err
	}
	fmt.Printf("  this session (%s): replies %d, %d prompt + %d completion tokens, last model %s\n",
		s.Title, s.Usage.Turns, s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.LastModel)
	return nil
}

// resume prints the last messages of session id, to continue it.
func resume(api, token, id string) error {
	var page struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := getJSON(api+"/sessions/"+id+"/messages?order=desc&limit=6", token, &page); err != nil {
		return err
	}
	fmt.Printf("(session %s)\n", id)
	for i := len(page.Messages) - 1; i >= 0; i-- {
		m := page.Messages[i]
		who := "you"
		if m.Role != "user" {
			who = m.Role
		}
		fmt.Printf("%s> %s\n", who, m.Content)
	}
	return nil
}

// lastOf returns the id of the latest message with role on the session's
// active branch.
func lastOf(api, token, session, role string) (string, error) {
	if session == "" {
		return "", errors.New("no session yet: send a message first")
	}
	var page struct {
		Messages []struct {
			ID   string `json:"id"`
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := getJSON(api+"/sessions/"+session+"/messages?order=desc&limit=20", token, &page); err != nil {
		return "", err
	}
	for _, m := range page.Messages {
		if m.Role == role {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("no %s message in the latest ones", role)
}

// regenerate answers the user's last message again, streaming the new reply.
func regenerate(api, token, session string) error {
	id, err := lastOf(api, token, session, "user")
	if err != nil {
		return err
	}
	_, err = turn(api, token, map[string]any{"sessionId": session, "regenerate": id})
	return err
}

// edit sends the user's last message anew as text.
func edit(api, token, session, text string) error {
	id, err := lastOf(api, token, session, "user")
	if err != nil {
		return err
	}
	_, err = turn(api, token, map[string]any{"sessionId": session, "edit": id, "message": text})
	return err
}

// turn runs one turn (body is /chat's request, without stream) and prints
// the streamed reply; it returns the session id.
func turn(api, token string, body map[string]any) (string, error) {
	session, _ := body["sessionId"].(string)
	body["stream"] = true
	resp, err := post(api+"/chat", token, body)
	if err != nil {
		return session, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return session, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	fmt.Print("assistant> ")
	r := bufio.NewReader(resp.Body)
	event := ""
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			return session, nil
		}
		if err != nil {
			return session, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			var v struct {
				SessionID string `json:"sessionId"`
				Text      string `json:"text"`
				Error     struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			json.Unmarshal(data, &v)
			switch event {
			case "session", "done":
				session = v.SessionID
			case "delta":
				fmt.Print(v.Text)
			case "error":
				return session, errors.New(v.Error.Message)
			}
		}
	}
}
