package main

import (
	"context"
	"fmt"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAuth is the Auth REST API: sign-in gives tok1, each refresh the next
// token (tok2, tok3…), all an hour long.
type fakeAuth struct {
	mu        sync.Mutex
	issued    int
	refreshes int
}

func (f *fakeAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issued++
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(r.URL.Path, "/securetoken.googleapis.com/") {
		r.ParseForm()
		if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != fmt.Sprintf("refresh%d", f.issued-1) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"INVALID_REFRESH_TOKEN"}}`)
			return
		}
		f.refreshes++
		fmt.Fprintf(w, `{"id_token":"tok%d","refresh_token":"refresh%d","expires_in":"3600"}`, f.issued, f.issued)
		return
	}
	fmt.Fprintf(w, `{"idToken":"tok%d","refreshToken":"refresh%d","expiresIn":"3600"}`, f.issued, f.issued)
}

// guardedAPI answers GET /usage with 200 to the tokens it takes, and 401
// to the others; it records the tokens it was shown.
type guardedAPI struct {
	mu    sync.Mutex
	takes func(token string) bool
	shown []string
}

func (g *guardedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	g.shown = append(g.shown, tok)
	ok := g.takes(tok)
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"code":"unauthenticated","message":"the ID token has expired"}}`)
		return
	}
	fmt.Fprint(w, `{"day":"2026-11-28"}`)
}

// TestTokenRefresh: an ID token near its expiry is refreshed before the
// call, through the securetoken endpoint with the refresh token; a token
// the API refuses anyway is refreshed and the call retried once, not more.
func TestTokenRefresh(t *testing.T) {
	ctx := context.Background()
	auth := &fakeAuth{}
	authSrv := httptest.NewServer(auth)
	defer authSrv.Close()
	clock := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	acct := &account{host: strings.TrimPrefix(authSrv.URL, "http://"), email: "a@example.com", password: "pw", now: func() time.Time { return clock }}
	if err := acct.signIn(ctx); err != nil {
		t.Fatal(err)
	}
	api := &guardedAPI{takes: func(tok string) bool { return tok != "tok1" && tok != "tok2" }}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()
	c := &client{base: apiSrv.URL, auth: acct}
	var out struct{ Day string }

	clock = clock.Add(56 * time.Minute) // tok1 expires in 4 minutes
	api.takes = func(tok string) bool { return tok == "tok2" }
	if err := c.getJSON(ctx, "/usage", &out); err != nil || out.Day == "" {
		t.Fatalf("after an hour: %v", err)
	}
	if got := strings.Join(api.shown, ","); got != "tok2" || auth.refreshes != 1 {
		t.Errorf("the API was shown %s after %d refreshes, want tok2 after 1", got, auth.refreshes)
	}

	api.shown, api.takes = nil, func(tok string) bool { return tok == "tok3" } // tok2 revoked early
	if err := c.getJSON(ctx, "/usage", &out); err != nil {
		t.Fatalf("after a 401: %v", err)
	}
	if got := strings.Join(api.shown, ","); got != "tok2,tok3" {
		t.Errorf("the API was shown %s, want tok2,tok3", got)
	}

	api.shown, api.takes = nil, func(string) bool { return false }
	err := c.getJSON(ctx, "/usage", &out)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || len(api.shown) != 2 {
		t.Errorf("refused for good: %v after %d calls, want the 401 after 2", err, len(api.shown))
	}
}

// TestTokenRefreshOnEmulator: the Auth emulator's sign-in and refresh
// answer as the client reads them.
func TestTokenRefreshOnEmulator(t *testing.T) {
	host := emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	ctx := context.Background()
	acct, err := signIn(ctx, host, fmt.Sprintf("refresh-%d@example.com", time.Now().UnixNano()), "a-password")
	if err != nil {
		t.Fatal(err)
	}
	first, refresh := acct.idToken, acct.refresh
	if first == "" || refresh == "" || acct.expires.Sub(time.Now()) < 50*time.Minute {
		t.Fatalf("signed in with %q, refresh %q, expiring %v", first, refresh, acct.expires)
	}
	acct.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	acct.password = "not-the-password" // a refresh, not a sign-in
	tok, err := acct.token(ctx)
	if err != nil || tok == "" || acct.expires.Sub(acct.now()) < 50*time.Minute {
		t.Fatalf("refreshed: %q, %v, expiring %v", tok, err, acct.expires)
	}
}
