package systemtest_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/appcheck"
	"github.com/golang-jwt/jwt/v4"

	"github.com/chatmemory/backend/functions"
)

// appCheckKeys is a signing key and a JWKS endpoint serving its public
// half, standing in for Firebase App Check's.
type appCheckKeys struct {
	key *rsa.PrivateKey
	srv *httptest.Server
}

func newAppCheckKeys(t *testing.T) *appCheckKeys {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "test-key", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	return &appCheckKeys{key: key, srv: srv}
}

// token signs an App Check token for project and app, valid from iat to exp.
func (k *appCheckKeys) token(t *testing.T, project, app string, iat, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "https://firebaseappcheck.googleapis.com/123456789",
		"aud": []string{"projects/123456789", "projects/" + project},
		"sub": app, "iat": iat.Unix(), "exp": exp.Unix(),
	})
	tok.Header["kid"] = "test-key"
	s, err := tok.SignedString(k.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAppCheck: in each mode, requests with a valid, expired, other
// project's, other app's, unreadable or no App Check token; off ignores
// them, monitor serves all and counts the bad ones, enforce refuses them
// with 401 unauthenticated.
func TestAppCheck(t *testing.T) {
	keys := newAppCheckKeys(t)
	// firebase-admin-go fetches App Check's keys from this variable when
	// its client is made.
	appcheck.JWKSUrl = keys.srv.URL
	fb, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: authProject()})
	if err != nil {
		t.Fatal(err)
	}
	client, err := fb.AppCheck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	alice := h.signUp()
	const app = "1:123456789:web:chatapp"
	now := time.Now()
	tokens := []struct {
		name  string
		token string
		valid bool
	}{
		{"Valid", keys.token(t, authProject(), app, now.Add(-time.Minute), now.Add(time.Hour)), true},
		{"Expired", keys.token(t, authProject(), app, now.Add(-2*time.Hour), now.Add(-time.Hour)), false},
		{"WrongProject", keys.token(t, "another-project", app, now.Add(-time.Minute), now.Add(time.Hour)), false},
		{"WrongApp", keys.token(t, authProject(), "1:123456789:web:otherapp", now.Add(-time.Minute), now.Add(time.Hour)), false},
		{"Unreadable", "not.a.token", false},
		{"Missing", "", false},
	}
	for _, mode := range []functions.AppCheckMode{functions.AppCheckOff, functions.AppCheckMonitor, functions.AppCheckEnforce} {
		ac := &functions.AppCheck{Mode: mode, Client: client, AppIDs: []string{app}}
		h.app.Edge.AppCheck = ac
		for _, tc := range tokens {
			header := map[string]string{}
			if tc.token != "" {
				header[functions.AppCheckHeader] = tc.token
			}
			r := doRequest(t, h.srv.URL, "GET", "/sessions", alice.token, nil, header)
			want := 200
			if mode == functions.AppCheckEnforce && !tc.valid {
				want = 401
			}
			if r.status != want || (want == 401 && r.errorCode() != "unauthenticated") {
				t.Errorf("%s, %s token: %d %s, want %d", mode, tc.name, r.status, r.body, want)
			}
		}
		missing, invalid := ac.Counts()
		wantMissing, wantInvalid := int64(1), int64(4)
		if mode == functions.AppCheckOff {
			wantMissing, wantInvalid = 0, 0
		}
		if missing != wantMissing || invalid != wantInvalid {
			t.Errorf("%s: counted %d missing and %d invalid, want %d and %d", mode, missing, invalid, wantMissing, wantInvalid)
		}
	}
	// Preflight requests and the health check are not App Checked; the
	// browser may send the header.
	pre := doRequest(t, h.srv.URL, "OPTIONS", "/chat", "", nil, map[string]string{
		"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,x-firebase-appcheck"})
	if !strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), functions.AppCheckHeader) {
		t.Errorf("preflight allows %q", pre.header.Get("Access-Control-Allow-Headers"))
	}
	doRequest(t, h.srv.URL, "GET", "/healthz", "", nil, nil).want(t, 200)
	if !strings.Contains(h.logs.String(), `"appCheck":"missing"`) {
		t.Errorf("the request log does not carry the App Check verdict")
	}
}
