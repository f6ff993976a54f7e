package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// scan walks every document of the project, subcollections included, and
// calls fn with its path and data.
func scan(t *testing.T, client *firestore.Client, fn func(path string, data map[string]any)) {
	t.Helper()
	ctx := context.Background()
	var walk func(cols *firestore.CollectionIterator)
	walk = func(cols *firestore.CollectionIterator) {
		for {
			col, err := cols.Next()
			if err == iterator.Done {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			refs, err := col.DocumentRefs(ctx).GetAll() // includes documents that only have subcollections
			if err != nil {
				t.Fatal(err)
			}
			for _, ref := range refs {
				snap, err := ref.Get(ctx)
				if err == nil {
					fn(ref.Path, snap.Data())
				}
				walk(ref.Collections(ctx))
			}
		}
	}
	walk(client.Collections(ctx))
}

// mentions reports whether a document names uid, by field value or path.
func mentions(path string, data map[string]any, uid string) bool {
	if strings.Contains(path, uid) {
		return true
	}
	b, _ := json.Marshal(data)
	return strings.Contains(string(b), uid)
}

type export struct {
	UserID   string `json:"userId"`
	Sessions []struct {
		Session     sessions.Session     `json:"session"`
		Compactions []history.Compaction `json:"compactions"`
		Messages    []history.Message    `json:"messages"`
	} `json:"sessions"`
	Usage map[string]any `json:"usage"`
}

func TestExportAndErase(t *testing.T) {
	h := newHarness(t)
	h.script(&script{})
	alice, bob := h.signUp(), h.signUp()
	// Alice: a long session with summaries, an archived and a deleted one.
	long := h.newSession(alice.token, map[string]any{"title": "long", "memory": map[string]any{"budgetTokens": 300}})
	for i := 0; i < 20; i++ {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": long, "message": fmt.Sprintf("alice says %d, at some length to fill the budget", i)}).want(t, 200)
	}
	arch, del := h.newSession(alice.token, map[string]any{"title": "a"}), h.newSession(alice.token, map[string]any{"title": "d"})
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": arch, "message": "archive me"}).want(t, 200)
	h.do("POST", "/sessions/"+arch+"/archive", alice.token, nil).want(t, 200)
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": del, "message": "delete me"}).want(t, 200)
	h.do("DELETE", "/sessions/"+del, alice.token, nil).want(t, 200)
	// Bob: one session.
	var bc chatResp
	h.do("POST", "/chat", bob.token, map[string]any{"message": "bob's secret"}).want(t, 200).decode(t, &bc)
	h.idle()

	r := h.do("GET", "/account/export", alice.token, nil).want(t, 200)
	if !strings.Contains(r.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("Content-Disposition %q", r.header.Get("Content-Disposition"))
	}
	var ex export
	r.decode(t, &ex)
	if ex.UserID != alice.uid || len(ex.Sessions) != 3 || ex.Usage == nil {
		t.Fatalf("export: user %q, %d sessions, usage %v", ex.UserID, len(ex.Sessions), ex.Usage)
	}
	byID := map[string]int{}
	for _, s := range ex.Sessions {
		if s.Session.UserID != alice.uid {
			t.Errorf("exported another user's session %s", s.Session.ID)
		}
		byID[s.Session.ID] = len(s.Messages)
		for i, m := range s.Messages {
			if m.Seq != i || m.SessionID != s.Session.ID {
				t.Errorf("session %s message %d has seq %d", s.Session.ID, i, m.Seq)
			}
		}
		if s.Session.ID == long && len(s.Compactions) == 0 {
			t.Errorf("the long session's summaries are missing")
		}
	}
	if byID[long] != 40 || byID[arch] != 2 || byID[del] != 2 {
		t.Errorf("messages per session: %v", byID)
	}
	if strings.Contains(string(r.body), bob.uid) || strings.Contains(string(r.body), "bob's secret") || strings.Contains(string(r.body), bc.SessionID) {
		t.Errorf("the export holds bob's data")
	}

	// Erase Alice. Count Bob's documents before and after.
	client := h.firestore
	count := func(uid string) (n int) {
		scan(t, client, func(path string, data map[string]any) {
			if mentions(path, data, uid) {
				n++
			}
		})
		return n
	}
	bobBefore, aliceBefore := count(bob.uid), count(alice.uid)
	if aliceBefore < 50 || bobBefore < 4 {
		t.Fatalf("before erasure: alice %d documents, bob %d", aliceBefore, bobBefore)
	}
	var er struct{ SessionsDeleted, DocumentsDeleted int }
	h.do("DELETE", "/account/data", alice.token, nil).want(t, 200).decode(t, &er)
	if er.SessionsDeleted != 3 || er.DocumentsDeleted != aliceBefore {
		t.Errorf("erasure reported %+v; alice had %d documents", er, aliceBefore)
	}
	scan(t, client, func(path string, data map[string]any) {
		if mentions(path, data, alice.uid) {
			t.Errorf("after erasure, %s still names alice", path)
		}
	})
	if got := count(bob.uid); got != bobBefore {
		t.Errorf("bob had %d documents, now %d", bobBefore, got)
	}
	// Erasure is idempotent, and the export is now empty.
	h.do("DELETE", "/account/data", alice.token, nil).want(t, 200).decode(t, &er)
	if er.SessionsDeleted != 0 || er.DocumentsDeleted != 0 {
		t.Errorf("second erasure: %+v", er)
	}
	h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &ex)
	if len(ex.Sessions) != 0 || ex.Usage != nil {
		t.Errorf("export after erasure: %+v", ex)
	}
	h.do("GET", "/sessions/"+bc.SessionID, bob.token, nil).want(t, 200)
}

// TestEraseFinishesInterruptedPurges: documents an interrupted purge left
// behind (with the session document gone) are erased too.
func TestEraseFinishesInterruptedPurges(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	var c chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "hello"}).want(t, 200).decode(t, &c)
	h.idle()
	// Cut a purge off after the session document went.
	ctx := context.Background()
	if _, err := h.firestore.Collection("chat_purges").Doc(c.SessionID).Set(ctx, map[string]any{"userId": alice.uid}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.firestore.Collection("chat_sessions").Doc(c.SessionID).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	h.do("DELETE", "/account/data", alice.token, nil).want(t, 200)
	scan(t, h.firestore, func(path string, data map[string]any) {
		if mentions(path, data, alice.uid) || strings.Contains(path, c.SessionID) {
			t.Errorf("left behind: %s", path)
		}
	})
}
