package systemtest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/llm/llmtest"
)

func TestRateLimits(t *testing.T) {
	t.Run("TurnsPerMinute", func(t *testing.T) {
		h := newHarness(t, func(c *app.Config) { c.TurnsPerMinute = 2 })
		alice, bob := h.signUp(), h.signUp()
		h.do("POST", "/chat", alice.token, map[string]any{"message": "one"}).want(t, 200)
		h.clock.Advance(30 * time.Second)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "two"}).want(t, 200)
		r := h.do("POST", "/chat", alice.token, map[string]any{"message": "three"})
		if r.status != 429 || r.errorCode() != "rate_limited" || r.header.Get("Retry-After") != "30" {
			t.Fatalf("third turn: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		h.do("POST", "/chat", bob.token, map[string]any{"message": "bob is not limited by alice"}).want(t, 200)
		h.clock.Advance(30 * time.Second)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "a new minute"}).want(t, 200)
	})
	t.Run("TokensPerDay", func(t *testing.T) {
		h := newHarness(t, func(c *app.Config) { c.TokensPerDay = 100 })
		h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response {
			return llmtest.Response{Content: "ok", PromptTokens: 90, CompletionTokens: 20}
		})
		alice := h.signUp()
		h.do("POST", "/chat", alice.token, map[string]any{"message": "spend"}).want(t, 200)
		h.idle() // the title's tokens are charged after the answer, still today
		r := h.do("POST", "/chat", alice.token, map[string]any{"message": "more"})
		wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 429 || wait != 12*3600 { // the clock stands at noon UTC
			t.Fatalf("over the daily budget: %d Retry-After %d", r.status, wait)
		}
		h.clock.Advance(12 * time.Hour)
		h.do("POST", "/chat", alice.token, map[string]any{"message": "a new day"}).want(t, 200)
	})
	// Appends are limited like turns: messages a minute, and the day's tokens.
	t.Run("AppendedMessages", func(t *testing.T) {
		h := newHarness(t, func(c *app.Config) { c.MessagesPerMinute = 5; c.TokensPerDay = 2000 })
		alice, bob := h.signUp(), h.signUp()
		var s sessionResp
		h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
		batch := func(n int, content string) map[string]any {
			msgs := make([]map[string]any, n)
			for i := range msgs {
				msgs[i] = map[string]any{"role": "user", "content": content}
			}
			return map[string]any{"messages": msgs}
		}
		path := "/sessions/" + s.ID + "/messages"
		h.do("POST", path, alice.token, batch(4, "four")).want(t, 201)
		r := h.do("POST", path, alice.token, batch(2, "two more"))
		if r.status != 429 || r.errorCode() != "rate_limited" || r.header.Get("Retry-After") != "60" {
			t.Fatalf("over the messages a minute: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		h.do("POST", path, alice.token, batch(1, "one fits")).want(t, 201)
		var bs sessionResp
		h.do("POST", "/sessions", bob.token, map[string]any{}).want(t, 201).decode(t, &bs)
		h.do("POST", "/sessions/"+bs.ID+"/messages", bob.token, batch(5, "bob is not limited by alice")).want(t, 201)
		if n := len(h.messages(alice.token, s.ID)); n != 5 {
			t.Fatalf("%d messages stored, want 5 (a refused batch stores nothing)", n)
		}
		// Appended tokens count against the day: one message of 8 KiB of
		// digits (about 2,700 tokens) spends it.
		h.clock.Advance(time.Minute)
		h.do("POST", path, alice.token, batch(1, strings.Repeat("7", 8<<10))).want(t, 201)
		r = h.do("POST", path, alice.token, batch(1, "more"))
		if r.status != 429 || r.errorCode() != "rate_limited" {
			t.Fatalf("over the daily tokens: %d %s", r.status, r.body)
		}
		if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": s.ID, "message": "and turns too"}); r.status != 429 {
			t.Fatalf("a turn after the day's tokens went to appends: %d %s", r.status, r.body)
		}
	})
}

// TestAuth: every authenticated endpoint refuses a missing, malformed or
// dead token, and hides another user's session behind a 404.
func TestAuth(t *testing.T) {
	h := newHarness(t)
	alice, mallory := h.signUp(), h.signUp()
	var chat chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "private"}).want(t, 200).decode(t, &chat)
	id := chat.SessionID
	h.idle() // the title is set after the answer
	before := h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).body
	beforeMsgs := h.do("GET", "/sessions/"+id+"/messages", alice.token, nil).want(t, 200).body

	ghost := h.signUp()
	if err := h.auth.DeleteUser(context.Background(), ghost.uid); err != nil {
		t.Fatal(err)
	}
	endpoints := []struct {
		method, path string
		body         any
	}{
		{"POST", "/chat", map[string]any{"sessionId": id, "message": "hi"}},
		{"POST", "/sessions", map[string]any{}},
		{"GET", "/sessions", nil},
		{"GET", "/sessions/" + id, nil},
		{"PATCH", "/sessions/" + id, map[string]any{"title": "pwned"}},
		{"DELETE", "/sessions/" + id, nil},
		{"POST", "/sessions/" + id + "/archive", nil},
		{"POST", "/sessions/" + id + "/restore", nil},
		{"GET", "/sessions/" + id + "/messages", nil},
		{"POST", "/sessions/" + id + "/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": "injected"}}}},
	}
	for _, ep := range endpoints {
		name := ep.method + " " + ep.path
		for tokName, tok := range map[string]string{"none": "", "malformed": "not.a.jwt", "garbage": "x", "deleted user": ghost.token} {
			if r := h.do(ep.method, ep.path, tok, ep.body); r.status != 401 || r.errorCode() != "unauthenticated" {
				t.Errorf("%s with %s token: %d %s", name, tokName, r.status, r.body)
			}
		}
		if strings.Contains(ep.path, id) {
			if r := h.do(ep.method, ep.path, mallory.token, ep.body); r.status != 404 || r.errorCode() != "not_found" {
				t.Errorf("%s as another user: %d %s", name, r.status, r.body)
			}
		}
	}
	if after := h.do("GET", "/sessions/"+id, alice.token, nil).want(t, 200).body; !bytes.Equal(after, before) {
		t.Errorf("another user changed the session:\n%s\n%s", before, after)
	}
	if after := h.do("GET", "/sessions/"+id+"/messages", alice.token, nil).want(t, 200).body; !bytes.Equal(after, beforeMsgs) {
		t.Errorf("another user changed the messages")
	}
	var list struct{ Sessions []sessionResp }
	h.do("GET", "/sessions", mallory.token, nil).want(t, 200).decode(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("mallory lists %d sessions", len(list.Sessions))
	}
	// The user id never comes from the body.
	if r := h.do("POST", "/sessions", mallory.token, map[string]any{"userId": alice.uid}); r.status != 400 {
		t.Errorf("userId in a body: %d", r.status)
	}
	// Tokens shaped like the Auth emulator's (unsigned) but for another
	// project, expired, or not decodable are refused. Signatures are
	// checked in production only: the emulator's tokens carry none.
	now := time.Now()
	for name, tok := range map[string]string{
		"other project": forgeToken("other-project", alice.uid, now, now.Add(time.Hour)),
		"expired":       forgeToken(authProject(), alice.uid, now.Add(-2*time.Hour), now.Add(-time.Hour)),
		"undecodable":   strings.Split(alice.token, ".")[0] + ".bm90IGpzb24." + strings.Split(alice.token, ".")[2],
	} {
		if r := h.do("GET", "/sessions", tok, nil); r.status != 401 || r.errorCode() != "unauthenticated" {
			t.Errorf("%s token: %d %s", name, r.status, r.body)
		}
	}
	// The forger's recipe is right: for the right project it is accepted.
	if r := h.do("GET", "/sessions", forgeToken(authProject(), alice.uid, now, now.Add(time.Hour)), nil); r.status != 200 {
		t.Errorf("well-formed emulator token refused: %d %s", r.status, r.body)
	}
}

// forgeToken makes an unsigned ID token like the Auth emulator's.
func forgeToken(project, uid string, iat, exp time.Time) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(map[string]any{
		"iss": "https://securetoken.google.com/" + project, "aud": project, "sub": uid, "user_id": uid,
		"iat": iat.Unix(), "exp": exp.Unix(), "auth_time": iat.Unix(),
		"firebase": map[string]any{"sign_in_provider": "password"},
	}) + "."
}

func TestBadBodies(t *testing.T) {
	h := newHarnessOn(t, "memory")
	alice := h.signUp()
	var s sessionResp
	h.do("POST", "/sessions", alice.token, map[string]any{}).want(t, 201).decode(t, &s)
	big := strings.Repeat("x", 70<<10) // over the 64 KiB cap of the test config
	cases := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"oversized chat", "POST", "/chat", map[string]any{"message": big}, 413},
		{"oversized append", "POST", "/sessions/" + s.ID + "/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": big}}}, 413},
		{"malformed JSON", "POST", "/chat", `{"message": "unterminated`, 400},
		{"not an object", "POST", "/sessions", `[1,2,3]`, 400},
		{"trailing data", "POST", "/sessions", `{} {}`, 400},
		{"empty body", "POST", "/chat", "", 400},
		{"unknown field", "POST", "/sessions", `{"title":"x","colour":"red"}`, 400},
		{"unknown metadata key", "POST", "/sessions", `{"metadata":{"topic":"x","secret":1}}`, 400},
		{"wrong type", "POST", "/sessions", `{"title":42}`, 400},
		{"content over 32 KiB", "POST", "/sessions/" + s.ID + "/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": strings.Repeat("y", 33<<10)}}}, 400},
		{"unknown role", "POST", "/sessions/" + s.ID + "/messages", map[string]any{"messages": []map[string]any{{"role": "god", "content": "x"}}}, 400},
		{"malformed id", "GET", "/sessions/..%2F..", nil, 400},
	}
	for _, c := range cases {
		if r := h.do(c.method, c.path, alice.token, c.body); r.status != c.status || r.errorCode() == "" {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
		}
	}
	// A body without Content-Length is capped as it is read.
	req, _ := http.NewRequest("POST", h.srv.URL+"/chat", io.MultiReader(strings.NewReader(`{"message":"`), strings.NewReader(big), strings.NewReader(`"}`)))
	req.Header.Set("Authorization", "Bearer "+alice.token)
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked oversized body: %d", resp.StatusCode)
	}
	if msgs := h.messages(alice.token, s.ID); len(msgs) != 0 {
		t.Errorf("bad bodies stored %d messages", len(msgs))
	}
	if r := h.do("GET", "/nowhere", alice.token, nil); r.status != 404 || r.errorCode() != "not_found" {
		t.Errorf("unknown path: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/sessions", alice.token, nil); r.status != 405 || r.errorCode() != "method_not_allowed" {
		t.Errorf("wrong method: %d %s", r.status, r.body)
	}
}

func TestCORS(t *testing.T) {
	h := newHarnessOn(t, "memory")
	pre := func(origin string) response {
		return doRequest(t, h.srv.URL, "OPTIONS", "/chat", "", nil, map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
	}
	r := pre("https://app.example.com")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("allowed preflight: %d %v", r.status, r.header)
	}
	if r := pre("https://evil.example.com"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed origin got %q", r.header.Get("Access-Control-Allow-Origin"))
	}
	alice := h.signUp()
	r = doRequest(t, h.srv.URL, "GET", "/sessions", alice.token, nil, map[string]string{"Origin": "https://app.example.com"})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("simple request: %d %v", r.status, r.header)
	}
}

// TestLogs: one structured line per request, without message content.
func TestLogs(t *testing.T) { onBothStores(t, testLogs) }

func testLogs(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	alice := h.signUp()
	var c chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "my secret is swordfish-42"}).want(t, 200).decode(t, &c)
	// The request line is written when the handler ends, which is after the
	// client has its answer (titles and summaries come after the reply).
	var logs string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if logs = h.logs.String(); strings.Contains(logs, `"path":"/chat"`) {
			break
		}
	}
	if strings.Contains(logs, "swordfish") {
		t.Errorf("message content in the logs:\n%s", logs)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if rec["path"] == "/chat" {
			found = true
			if rec["userId"] != alice.uid || rec["sessionId"] != c.SessionID || rec["requestId"] == "" || rec["latencyMs"] == nil {
				t.Errorf("request log: %v", rec)
			}
		}
	}
	if !found {
		t.Errorf("no request log for /chat:\n%s", logs)
	}
}

// TestHealthzUnavailable: with Firestore unreachable, /healthz says so.
func TestHealthzUnavailable(t *testing.T) {
	t.Parallel()
	srv := serveWith(t, firestoredb.New(firestoreAt(t, "127.0.0.1:1")), &functions.FirebaseVerifier{}) // a closed port
	r := doRequest(t, srv, "GET", "/healthz", "", nil, nil)
	if r.status != 503 || !strings.Contains(string(r.body), "unavailable") {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
}
