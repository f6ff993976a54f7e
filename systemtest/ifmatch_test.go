package systemtest_test

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestIfMatch: GET …/context names the version it read; POST …/messages
// with it as ifMatch (or in If-Match) stores the exchange only if nothing
// changed since, and answers 412 with nothing stored otherwise; a retry
// of a keyed batch that landed replays whatever it is given; the version
// an append returns is the one the next context read sees. On Firestore,
// an append given the version this instance just read, by a user whose
// last append ran here, reads nothing: it is one commit.
func TestIfMatch(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice := h.signUp()
		id := h.newSession(alice.token, map[string]any{"title": "if-match"})
		exchange := func(n string) map[string]any {
			return map[string]any{"messages": []map[string]any{{"role": "user", "content": "question " + n}, {"role": "assistant", "content": "answer " + n}}}
		}
		versionOf := func(r response) string {
			t.Helper()
			var v struct {
				Version string `json:"version"`
			}
			if err := json.Unmarshal(r.body, &v); err != nil || v.Version == "" {
				t.Fatalf("no version in %s", r.body)
			}
			if etag := r.header.Get("ETag"); etag != strconv.Quote(v.Version) {
				t.Fatalf("ETag %s for version %q", etag, v.Version)
			}
			return v.Version
		}
		context := func() string {
			t.Helper()
			return versionOf(h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200))
		}
		path := "/sessions/" + id + "/messages"
		h.do("POST", path, alice.token, exchange("0")).want(t, 201)
		h.idle()
		v0 := context()
		body := exchange("1")
		body["ifMatch"] = v0
		var v1 string
		if backend == "firestore" {
			before := h.counter.Snapshot()
			v1 = versionOf(h.do("POST", path, alice.token, body).want(t, 201))
			if c := h.counter.Snapshot().Sub(before); c.RoundTrips != 1 || c.Reads != 0 {
				t.Errorf("an append at the version just read: %s; want 1 round trip and no reads", c)
			}
		} else {
			v1 = versionOf(h.do("POST", path, alice.token, body).want(t, 201))
		}
		if v1 == v0 || context() != v1 {
			t.Errorf("the append left version %q (read at %q); the context now reads %q", v1, v0, context())
		}
		// Stale: 412, nothing stored.
		r := h.do("POST", path, alice.token, body).want(t, 412)
		if r.errorCode() != "changed" {
			t.Errorf("a stale ifMatch: %s", r.body)
		}
		if n := len(h.listing(alice.token, id, "all")); n != 4 {
			t.Errorf("%d messages after a refused append, want 4", n)
		}
		// The header, alone or with the same body field; not a different one.
		hdr := map[string]string{"If-Match": strconv.Quote(v1)}
		doRequest(t, h.srv.URL, "POST", path, alice.token, exchange("2"), hdr).want(t, 201)
		body = exchange("3")
		body["ifMatch"] = v0
		doRequest(t, h.srv.URL, "POST", path, alice.token, body, map[string]string{"If-Match": strconv.Quote(context())}).want(t, 400)
		doRequest(t, h.srv.URL, "POST", path, alice.token, exchange("3"), map[string]string{"If-Match": "unquoted"}).want(t, 400)
		// A keyed batch that landed replays, though its version is past.
		keyed := exchange("4")
		keyed["clientMessageId"], keyed["ifMatch"] = "batch-4", context()
		first := h.do("POST", path, alice.token, keyed).want(t, 201)
		again := h.do("POST", path, alice.token, keyed).want(t, 201)
		var a, b struct {
			Messages []struct{ ID string } `json:"messages"`
		}
		json.Unmarshal(first.body, &a)
		json.Unmarshal(again.body, &b)
		if len(a.Messages) != 2 || len(b.Messages) != 2 || a.Messages[0].ID != b.Messages[0].ID {
			t.Errorf("a keyed retry: %s then %s", first.body, again.body)
		}
		if n := len(h.listing(alice.token, id, "all")); n != 8 {
			t.Errorf("%d messages, want 8", n)
		}
	})
}
