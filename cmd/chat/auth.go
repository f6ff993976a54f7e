package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// refreshMargin is how long before its expiry an ID token is refreshed.
const refreshMargin = 5 * time.Minute

// account is the signed-in user's ID token, refreshed before it expires
// (Firebase ID tokens last an hour) with the refresh token, through the
// Auth REST API's securetoken endpoint; signing in again if that fails.
type account struct {
	host, email, password string
	now                   func() time.Time

	mu      sync.Mutex
	idToken string
	refresh string
	expires time.Time
}

// tokenReply is what sign-in and refresh answer (they name fields apart).
type tokenReply struct {
	IDToken      string `json:"idToken"`
	IDToken2     string `json:"id_token"`
	RefreshToken string `json:"refreshToken"`
	Refresh2     string `json:"refresh_token"`
	ExpiresIn    string `json:"expiresIn"`
	Expires2     string `json:"expires_in"`
	Error        struct {
		Message string `json:"message"`
	} `json:"error"`
}

// signIn signs in to the Auth service at host, signing up if needed.
func signIn(ctx context.Context, host, email, password string) (*account, error) {
	a := &account{host: host, email: email, password: password, now: time.Now}
	return a, a.signIn(ctx)
}

// token is an ID token good for refreshMargin at least.
func (a *account) token(ctx context.Context) (string, error) {
	a.mu.Lock()
	due := a.now().After(a.expires.Add(-refreshMargin))
	tok := a.idToken
	a.mu.Unlock()
	if !due {
		return tok, nil
	}
	if err := a.renew(ctx); err != nil {
		return "", err
	}
	return a.token(ctx)
}

// renew gets a new ID token with the refresh token, or by signing in
// again when the refresh token is refused.
func (a *account) renew(ctx context.Context) error {
	a.mu.Lock()
	refresh := a.refresh
	a.mu.Unlock()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
	var out tokenReply
	err := postForm(ctx, "http://"+a.host+"/securetoken.googleapis.com/v1/token?key=any", form, &out)
	if err == nil && out.IDToken2 != "" {
		a.keep(out.IDToken2, out.Refresh2, out.Expires2)
		return nil
	}
	return a.signIn(ctx)
}

// signIn gets an ID token with the password, creating the account on
// first use.
func (a *account) signIn(ctx context.Context) error {
	body := map[string]any{"email": a.email, "password": a.password, "returnSecureToken": true}
	var out tokenReply
	for _, op := range []string{"signInWithPassword", "signUp"} {
		out = tokenReply{}
		u := "http://" + a.host + "/identitytoolkit.googleapis.com/v1/accounts:" + op + "?key=any"
		if err := postJSON(ctx, u, body, &out); err != nil {
			return fmt.Errorf("auth emulator at %s: %w", a.host, err)
		}
		if out.IDToken != "" {
			a.keep(out.IDToken, out.RefreshToken, out.ExpiresIn)
			return nil
		}
		if !strings.HasPrefix(out.Error.Message, "EMAIL_NOT_FOUND") && !strings.HasPrefix(out.Error.Message, "INVALID_LOGIN_CREDENTIALS") {
			break
		}
	}
	return fmt.Errorf("sign-in failed: %s", out.Error.Message)
}

// keep holds a new ID token, valid for expiresIn seconds (an hour if it
// does not say).
func (a *account) keep(idToken, refresh, expiresIn string) {
	secs, err := strconv.Atoi(expiresIn)
	if err != nil || secs <= 0 {
		secs = 3600
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.idToken, a.expires = idToken, a.now().Add(time.Duration(secs)*time.Second)
	if refresh != "" {
		a.refresh = refresh
	}
}

// postForm posts form to u and reads its JSON answer, whatever the status.
func postForm(ctx context.Context, u string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return doJSON(req, out)
}
