package systemtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestAISDKStreamKeepAlive: a client that keeps its connections alive (as
// browsers and Node's fetch do) sends its next request after a streamed
// AI SDK reply without a reset or an EOF: the server, which ends the
// stream by closing the connection, says so in the stream's headers
// (Connection: close), so the client does not reuse it. Twenty streams,
// each followed by a POST on the same client, all succeed.
func TestAISDKStreamKeepAlive(t *testing.T) {
	h := newHarnessOn(t, "memory")
	alice := h.signUp()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	post := func(path string, body any) (*http.Response, []byte, error) {
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", h.srv.URL+path, bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+alice.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		h.sent.Add(1) // it reached the server
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	failed := 0
	for i := range 20 {
		msg := map[string]any{"id": fmt.Sprintf("u%d", i), "role": "user", "parts": []any{map[string]any{"type": "text", "text": "hello"}}}
		resp, body, err := post("/ai-sdk/chat", map[string]any{"id": "keepalive", "trigger": "submit-message", "messages": []any{msg}})
		if err != nil || resp.StatusCode != 200 || !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
			t.Fatalf("stream %d: %v %s", i, err, body)
		}
		if !resp.Close {
			t.Errorf("stream %d: the connection is closed after it without Connection: close (%v)", i, resp.Header)
		}
		if resp, body, err := post("/sessions", map[string]any{"title": "next"}); err != nil || resp.StatusCode != 201 {
			failed++
			t.Logf("the POST after stream %d: %v %s", i, err, body)
		}
	}
	if failed > 0 {
		t.Errorf("%d of 20 POSTs after a stream failed", failed)
	}
	h.idle()
}
