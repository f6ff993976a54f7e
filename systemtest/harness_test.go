package systemtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"firebase.google.com/go/v4/auth"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/emulator"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/functions/functionstest"
	"github.com/chatmemory/backend/gcsblob"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/clock/clocktest"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/storage"
	"github.com/chatmemory/backend/storetest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// harness is the real server on both emulators, with the real go-openai
// client talking to a scripted OpenAI-compatible server.
type harness struct {
	t         *testing.T
	counter   *firestoretest.Counter  // what the server's Firestore client did
	metrics   *sdkmetric.ManualReader // what the server recorded
	firestore *firestore.Client       // the server's client, for looking behind the API
	srv       *httptest.Server
	app       *app.App
	model     *llmtest.Server
	clock     *clocktest.Clock
	auth      *auth.Client // the Auth emulator's; nil on the in-process store
	local     *localAuth   // Auth in its place on the in-process store
	logs      *syncBuffer
	sent      atomic.Int64      // requests sent with do
	done      atomic.Int64      // requests the server finished (its handler returned; after-turn jobs may still run)
	lookups   atomic.Int64      // calls of the Auth directory (the backstop's)
	blobs     attachments.Blobs // where the server keeps files: the Cloud Storage emulator beside Firestore
	start     func()            // starts the server on a new instance of the app
}

// restart serves the API from a new instance of the app on the same
// store: nothing this instance kept in memory is known to it.
func (h *harness) restart() {
	h.t.Helper()
	h.idle()
	h.start()
}

// idle waits until every request sent with do has finished on the server,
// and then the after-turn jobs they started (a turn hands its job over
// before its handler returns).
func (h *harness) idle() {
	h.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if h.done.Load() >= h.sent.Load() {
			h.app.AfterTurn.Wait()
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the server is still busy")
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// authProject is the project the Auth emulator issues tokens for.
func authProject() string {
	if p := os.Getenv("GOOGLE_CLOUD_PROJECT"); p != "" {
		return p
	}
	return emulator.DefaultProjectID
}

func testConfig() app.Config {
	return app.Config{
		Backend: "firestore", ProjectID: authProject(), ChatModel: "gpt-4o-mini",
		SystemPrompt: "You are a test assistant.", MaxBodyBytes: 64 << 10,
		MaxSessionMessages: 1000, TurnsPerMinute: chat.MaxTurnsPerMinute, TokensPerDay: 10_000_000,
		ModelTimeout: 10 * time.Second, AllowedOrigins: []string{"https://app.example.com"},
	}
}

var clockStart = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, configure ...func(*app.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, "firestore", configure...)
}

// newHarnessOn is newHarness on the named store: "firestore" (the
// emulators of Firestore and Auth) or "memory" (the in-process store and
// localAuth: no emulator, and no Firestore client, counter or Auth client).
func newHarnessOn(t *testing.T, backend string, configure ...func(*app.Config)) *harness {
	t.Helper()
	t.Parallel()
	if backend == "firestore" {
		emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	}
	h := &harness{t: t, model: llmtest.New(t), clock: clocktest.NewClock(clockStart), logs: &syncBuffer{}}
	cfg := testConfig()
	for _, c := range configure {
		c(&cfg)
	}
	var store storage.Store = inprocdb.New()
	if backend == "firestore" {
		h.counter = &firestoretest.Counter{DialOptions: functions.FirestoreRPCCounting()}
		h.firestore, _ = emulatortest.FirestoreWith(t, func(ctx context.Context, project string) (*firestore.Client, error) {
			return firestoretest.Dial(ctx, project, h.counter)
		})
	}
	verifier, directory := h.authFor(backend)
	h.blobs = inprocdb.NewBlobs()
	if backend == "firestore" {
		client, bucket := emulatortest.Storage(t)
		h.blobs = gcsblob.New(client, bucket)
	}
	model := llm.NewOpenAI("test-key", h.model.BaseURL(), nil)
	var embedder recall.Embedder // tests that search turn embeddings on
	if cfg.Embeddings {
		embedder = llm.NewEmbeddings(model, "text-embedding-3-small", 512)
	}
	tokens := storetest.Tokens(t)
	h.start = func() {
		h.metrics = sdkmetric.NewManualReader()
		if backend == "firestore" {
			store = app.Firestore(h.firestore, firestoredb.Timeout(cfg.FirestoreTimeout))
		}
		h.app = app.New(cfg, app.Deps{
			Store:     store,
			Auth:      verifier,
			Model:     model,
			Embedder:  embedder,
			Blobs:     h.blobs,
			Directory: countedDirectory{directory, &h.lookups},
			Tokens:    tokens,
			Log:       slog.New(slog.NewJSONHandler(h.logs, nil)),
			Now:       h.clock.Now,
			Meter:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.metrics)),
		})
		h.srv = httptest.NewServer(counted(h.app.Handler(), &h.done))
		t.Cleanup(h.srv.Close)
	}
	h.start()
	t.Cleanup(h.logProblems)
	return h
}

// authFor is what verifies tokens and tells deleted accounts on backend:
// the Auth emulator beside Firestore's, localAuth beside the in-process
// store.
func (h *harness) authFor(backend string) (functions.Verifier, retention.Directory) {
	if backend == "memory" {
		h.local = newLocalAuth()
		return h.local, h.local
	}
	h.auth = newAuthClient(h.t)
	return &functions.FirebaseVerifier{Client: h.auth}, app.AuthDirectory{Client: h.auth}
}

// onBothStores runs test on the Firestore emulator and on the in-process
// store (which needs no emulator).
func onBothStores(t *testing.T, test func(t *testing.T, backend string)) {
	for _, backend := range []string{"firestore", "memory"} {
		t.Run(backend, func(t *testing.T) { test(t, backend) })
	}
}

// counted serves with next and counts each request it finished in n.
func counted(next http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer n.Add(1)
		next.ServeHTTP(w, r)
	})
}

// logProblems shows the server's warnings and errors when a test failed.
func (h *harness) logProblems() {
	if !h.t.Failed() {
		return
	}
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			h.t.Log("server: " + line)
		}
	}
}

type user struct {
	uid, token, email string
}

var userSeq struct {
	sync.Mutex
	n int
}

// signUp creates a user (a real one on the Auth emulator, beside
// Firestore's) and returns it with its ID token.
func (h *harness) signUp() user {
	h.t.Helper()
	userSeq.Lock()
	userSeq.n++
	email := fmt.Sprintf("u%d-%d@example.com", time.Now().UnixNano(), userSeq.n)
	userSeq.Unlock()
	if h.local != nil {
		return h.local.signUp(email)
	}
	return signUp(h.t, email)
}

func signUp(t testing.TB, email string) user {
	t.Helper()
	url := "http://" + os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") + "/identitytoolkit.googleapis.com/v1/accounts:signUp?key=test"
	body, _ := json.Marshal(map[string]any{"email": email, "password": "password123", "returnSecureToken": true})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		IDToken string `json:"idToken"`
		LocalID string `json:"localId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IDToken == "" {
		t.Fatalf("signUp: %v (status %s)", err, resp.Status)
	}
	return user{uid: out.LocalID, token: out.IDToken, email: email}
}

// deleteUser deletes the account uid from Auth (localAuth on the
// in-process store).
func (h *harness) deleteUser(uid string) {
	h.t.Helper()
	if h.local != nil {
		h.local.deleteUser(uid)
		return
	}
	if err := h.auth.DeleteUser(context.Background(), uid); err != nil {
		h.t.Fatal(err)
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorResp is an error body, or the data of an error event.
type errorResp struct {
	Error struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		RetryAfter int    `json:"retryAfter"`
	} `json:"error"`
}

// errorCode returns the code of an error body.
func (r response) errorCode() string {
	var e errorResp
	json.Unmarshal(r.body, &e)
	if e.Error.Code == "" { // the callable protocol carries it in details
		var c struct {
			Error struct {
				Details struct {
					Code string `json:"code"`
				} `json:"details"`
			} `json:"error"`
		}
		json.Unmarshal(r.body, &c)
		return c.Error.Details.Code
	}
	return e.Error.Code
}

// do sends a request; body may be nil, a string (sent as is) or a value
// (sent as JSON).
func (h *harness) do(method, path, token string, body any) response {
	h.t.Helper()
	h.sent.Add(1)
	return doRequest(h.t, h.srv.URL, method, path, token, body, nil)
}

func doRequest(t testing.TB, base, method, path, token string, body any, header map[string]string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	functionstest.CheckContract(t, req, resp.StatusCode, resp.Header, data)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// want fails the test unless r has status.
func (r response) want(t testing.TB, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r
}

type event struct {
	name string
	data json.RawMessage
}

// readEvents parses a server-sent event stream until it ends or stop says so.
func readEvents(t testing.TB, r io.Reader, stop func(event) bool) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case line == "" && cur.name != "":
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out
			}
			cur = event{}
		}
	}
	return out
}

// sessionResp is a session as the API returns it.
type sessionResp struct {
	ID           string `json:"id"`
	UserID       string `json:"userId"`
	Title        string `json:"title"`
	Status       string `json:"status"`
	MessageCount int    `json:"messageCount"`
	TokenCount   int    `json:"tokenCount"`
}

type messageResp struct {
	ID        string `json:"id"`
	Seq       int    `json:"seq"`
	ParentSeq int    `json:"parentSeq"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Tokens    int    `json:"tokens"`
	Metadata  struct {
		Model        string `json:"model"`
		DurationMs   int64  `json:"durationMs"`
		FinishReason string `json:"finishReason"`
	} `json:"metadata"`
}

type chatResp struct {
	SessionID   string      `json:"sessionId"`
	UserMessage messageResp `json:"userMessage"`
	Reply       messageResp `json:"reply"`
	Replayed    bool        `json:"replayed"`
}

// messages returns every message of a session, oldest first.
func (h *harness) messages(token, id string) []messageResp {
	h.t.Helper()
	var page struct {
		Messages []messageResp `json:"messages"`
	}
	h.do("GET", "/sessions/"+id+"/messages?limit=100", token, nil).want(h.t, 200).decode(h.t, &page)
	return page.Messages
}
