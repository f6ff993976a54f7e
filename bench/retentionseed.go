package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"

	"github.com/chatmemory/backend/emulator"
)

// apiClient calls the backend's HTTP API as a signed-in user's app would.
type apiClient struct {
	base string
	http *http.Client
}

// signUpUsers creates n users on the Auth emulator and returns their ID
// tokens.
func signUpUsers(ctx context.Context, n int) ([]string, error) {
	host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")
	if host == "" {
		return nil, fmt.Errorf("FIREBASE_AUTH_EMULATOR_HOST is not set; run `make bench-retention`")
	}
	tokens := make([]string, n)
	stamp := time.Now().UnixNano()
	err := parallel(ctx, n, 8, func(i int) error {
		body, _ := json.Marshal(map[string]any{"email": fmt.Sprintf("bench%d-%d@example.com", stamp, i), "password": "bench-password", "returnSecureToken": true})
		resp, err := http.Post("http://"+host+"/identitytoolkit.googleapis.com/v1/accounts:signUp?key=bench", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct{ IDToken string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IDToken == "" {
			return fmt.Errorf("signing up a bench user: %d %v", resp.StatusCode, err)
		}
		tokens[i] = out.IDToken
		return nil
	})
	return tokens, err
}

// serve serves h on a local port for the run, as cmd/server would, and
// returns a client for each of n apps calling it.
func serve(h http.Handler, n int) ([]*apiClient, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	apps := make([]*apiClient, n)
	for i := range apps {
		// One connection an app: its requests reach the server one after
		// another, each after the work that followed the one before (an
		// append's embeddings before the session's deletion), as an app
		// that waits for its answers sees them.
		tr := &http.Transport{MaxConnsPerHost: 1}
		apps[i] = &apiClient{base: "http://" + l.Addr().String(), http: &http.Client{Timeout: time.Minute, Transport: tr}}
	}
	return apps, func() { srv.Close() }, nil
}

// seedSession creates a session of kind for the user of token through
// the API, appends messages messages, and archives or deletes it as its
// kind says; it returns the session's id.
func (c *apiClient) seedSession(ctx context.Context, token, kind string, i, messages int) (string, error) {
	var s struct{ ID string }
	if err := c.call(ctx, token, "POST", "/sessions", map[string]any{"metadata": map[string]any{"topic": kind}}, &s, http.StatusCreated); err != nil {
		return "", err
	}
	if messages > 0 {
		msgs := make([]map[string]any, messages)
		for j := range msgs {
			msgs[j] = map[string]any{"role": []string{"user", "assistant"}[j%2],
				"content": fmt.Sprintf("%s session %d, message %d: a sentence or two of ordinary conversation.", kind, i, j)}
		}
		if err := c.call(ctx, token, "POST", "/sessions/"+s.ID+"/messages", map[string]any{"messages": msgs}, nil, http.StatusCreated); err != nil {
			return "", err
		}
	}
	switch kind {
	case "deleted":
		return s.ID, c.call(ctx, token, "DELETE", "/sessions/"+s.ID, nil, nil, http.StatusOK)
	case "archived":
		return s.ID, c.call(ctx, token, "POST", "/sessions/"+s.ID+"/archive", nil, nil, http.StatusOK)
	}
	return s.ID, nil
}

// call sends body (nil: none) and decodes the answer into out (nil:
// discarded); any status but want is an error.
func (c *apiClient) call(ctx context.Context, token, method, path string, body, out any, want int) error {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// makeDue moves only the expiry of each session in ids to before now, as
// time passing would: the sweep then finds it due.
func makeDue(ctx context.Context, client *firestore.Client, ids []string, now time.Time) error {
	return parallel(ctx, len(ids), 32, func(i int) error {
		_, err := client.Collection("chat_sessions").Doc(ids[i]).Update(ctx, []firestore.Update{{Path: "expiresAt", Value: now.Add(-time.Minute)}})
		return err
	})
}

// newFirebaseApp is the Firebase app whose Auth client verifies the
// emulator's tokens.
func newFirebaseApp(ctx context.Context) (*firebase.App, error) {
	return firebase.NewApp(ctx, &firebase.Config{ProjectID: authProject()})
}

// authProject is the project the Auth emulator issues tokens for.
func authProject() string {
	if p := os.Getenv("GOOGLE_CLOUD_PROJECT"); p != "" {
		return p
	}
	return emulator.DefaultProjectID
}
