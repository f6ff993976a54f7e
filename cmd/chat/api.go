package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// apiError is an error the API answered with, shown as one line.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string {
	if e.code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.status, e.message)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.message, e.status, e.code)
}

// getJSON reads url as the signed-in user into out; an error status is the
// API's error.
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
		return errorOf(resp)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// errorOf reads an error response's body as the API's error.
func errorOf(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
		return &apiError{status: resp.StatusCode, code: body.Error.Code, message: body.Error.Message}
	}
	return &apiError{status: resp.StatusCode, message: strings.Join(strings.Fields(string(b)), " ")}
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
