package main

import (
	"bytes"
	"context"
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

// tokens gives the ID token to call the API with, and a new one when the
// API refuses it.
type tokens interface {
	token(ctx context.Context) (string, error)
	renew(ctx context.Context) error
}

// client calls the API as the signed-in user.
type client struct {
	base string
	auth tokens
}

// getJSON reads path into out.
func (c *client) getJSON(ctx context.Context, path string, out any) error {
	return c.callJSON(ctx, http.MethodGet, path, nil, out)
}

// callJSON sends method path with body and reads the answer into out (nil:
// the answer is dropped).
func (c *client) callJSON(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.call(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// call sends method path with body (JSON; nil for none) and returns the
// response when its status is 2xx, else the API's error. A 401 is retried
// once with a renewed token.
func (c *client) call(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var data []byte
	if body != nil {
		data, _ = json.Marshal(body)
	}
	for try := 0; ; try++ {
		resp, err := c.send(ctx, method, path, data)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized && try == 0 {
			resp.Body.Close()
			if err := c.auth.renew(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode/100 != 2 {
			defer resp.Body.Close()
			return nil, errorOf(resp)
		}
		return resp, nil
	}
}

func (c *client) send(ctx context.Context, method, path string, data []byte) (*http.Response, error) {
	tok, err := c.auth.token(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
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

// postJSON posts body to u and reads its JSON answer, whatever the status
// (the Auth API says what went wrong in it).
func postJSON(ctx context.Context, u string, body, out any) error {
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return doJSON(req, out)
}

func doJSON(req *http.Request, out any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}
