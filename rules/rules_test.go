// Package rules_test proves firestore.rules against the Firestore emulator:
// the repo's rules file is loaded into a fresh project, data is seeded by
// the backend's own code as admin, and real users of the Auth emulator read
// and write over Firestore's REST API with their ID tokens, exactly as a web
// client would.
package rules_test

import (
	"bytes"
	"cloud.google.com/go/firestore"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

type fsREST struct {
	t       *testing.T
	base    string // http://host/v1/projects/P/databases/(default)/documents
	project string
}

type result struct {
	status int
	body   []byte
}

func (r result) denied() bool {
	return r.status == http.StatusForbidden && strings.Contains(string(r.body), "PERMISSION_DENIED")
}

func (f *fsREST) call(method, url, token string, body any) result {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, b}
}

// get reads one document (path relative to the documents root).
func (f *fsREST) get(token, path string) result {
	return f.call("GET", f.base+"/"+path, token, nil)
}

// query runs a structured query under parent ("" for the root) on
// collection, optionally constrained to userId == uid; allDescendants makes
// it a collection-group query.
func (f *fsREST) query(token, parent, collection, uid string, allDescendants bool) result {
	q := map[string]any{"from": []map[string]any{{"collectionId": collection, "allDescendants": allDescendants}}}
	if uid != "" {
		q["where"] = map[string]any{"fieldFilter": map[string]any{
			"field": map[string]any{"fieldPath": "userId"}, "op": "EQUAL", "value": map[string]any{"stringValue": uid}}}
	}
	url := f.base + ":runQuery"
	if parent != "" {
		url = f.base + "/" + parent + ":runQuery"
	}
	return f.call("POST", url, token, map[string]any{"structuredQuery": q})
}

// names returns the ids of the documents a successful query returned.
func names(t *testing.T, r result) []string {
	t.Helper()
	var rows []struct {
		Document *struct {
			Name string `json:"name"`
		} `json:"document"`
	}
	if err := json.Unmarshal(r.body, &rows); err != nil {
		t.Fatalf("query result %s: %v", r.body, err)
	}
	var out []string
	for _, row := range rows {
		if row.Document != nil {
			out = append(out, row.Document.Name[strings.LastIndex(row.Document.Name, "/")+1:])
		}
	}
	sort.Strings(out)
	return out
}

func (f *fsREST) loadRules() {
	f.t.Helper()
	src, err := os.ReadFile("../firestore.rules")
	if err != nil {
		f.t.Fatal(err)
	}
	url := "http://" + os.Getenv("FIRESTORE_EMULATOR_HOST") + "/emulator/v1/projects/" + f.project + ":securityRules"
	r := f.call("PUT", url, "", map[string]any{"rules": map[string]any{"files": []map[string]any{{"name": "firestore.rules", "content": string(src)}}}})
	if r.status != 200 {
		f.t.Fatalf("loading rules: %d %s", r.status, r.body)
	}
}

type user struct{ uid, token string }

func signUp(t *testing.T) user {
	t.Helper()
	url := "http://" + os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") + "/identitytoolkit.googleapis.com/v1/accounts:signUp?key=test"
	body, _ := json.Marshal(map[string]any{"email": fmt.Sprintf("r%d@example.com", time.Now().UnixNano()), "password": "password123", "returnSecureToken": true})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ IDToken, LocalID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IDToken == "" {
		t.Fatalf("signUp: %v", err)
	}
	return user{out.LocalID, out.IDToken}
}

// otherProjectUser is a user of another Firebase project: a token minted
// for that project (audience and issuer), with a uid of its own. (The
// emulator checks no signatures or audiences; production Firestore refuses
// such a token before rules run. Here the rules must refuse it on their own.)
func otherProjectUser() user {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	now := time.Now().Unix()
	uid := fmt.Sprintf("other%d", time.Now().UnixNano())
	tok := enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(map[string]any{
		"iss": "https://securetoken.google.com/another-project", "aud": "another-project", "sub": uid, "user_id": uid,
		"iat": now, "exp": now + 3600, "auth_time": now, "firebase": map[string]any{"sign_in_provider": "password"},
	}) + "."
	return user{uid, tok}
}

type seeded struct {
	active, archived, deleted, bobs string // session ids
	messages                        []string
	compaction                      string
	usage                           string // doc id
	day                             string // of the usage day document
	memory, fact                    string // alice's memory document and one fact
}

// seed writes, as admin and through the backend's own code, what the rules
// must protect: sessions of every status, messages, the context document,
// a compaction record, usage, and a purge marker.
func seed(t *testing.T, db *firestoredb.DB, alice, bob user) seeded {
	ctx := context.Background()
	env := storetest.NewEnv(t, db)
	env.History.Summarizer = llm.Summarizer{Model: llm.Offline{}}
	small := sessions.CreateInput{Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer, BudgetTokens: 300, Trim: sessions.TrimEach}}
	var s seeded
	act := storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, alice.uid, small))
	s.active = act.ID
	for i := 0; i < 12; i++ {
		m := env.Say(t, act, []history.Role{history.RoleUser, history.RoleAssistant}[i%2], fmt.Sprintf("message %d with enough words to need a summary soon", i))
		s.messages = append(s.messages, m.ID)
	}
	c := storetest.Must[*history.Compaction](t)(env.History.Compact(ctx, act.ID, 0))
	s.compaction = c.ID
	s.archived = env.NewSession(t, alice.uid).ID
	storetest.Must[*sessions.Session](t)(env.Sessions.Archive(ctx, alice.uid, s.archived))
	del := env.NewSession(t, alice.uid)
	env.Say(t, del, history.RoleUser, "in a deleted session")
	storetest.Must[*sessions.Session](t)(env.Sessions.Delete(ctx, alice.uid, del.ID))
	s.deleted = del.ID
	s.bobs = env.NewSession(t, bob.uid).ID
	if err := db.UpdateUsage(ctx, alice.uid, chat.Day(time.Now()), func(u *chat.Usage) error { u.MinuteMessages = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	s.usage = firestoredb.UserDocID(alice.uid)
	s.day = chat.Day(time.Now())
	if err := db.AddTokens(ctx, alice.uid, s.day, 5); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	u := &longterm.User{UserID: alice.uid, Profile: longterm.Profile{Work: longterm.ProfileField{Text: "Baker."}}, Block: "block",
		Facts: []longterm.Fact{{ID: "f2", Content: "The user bakes bread.", Category: longterm.CategoryPersonal, Confidence: 0.9, CreatedAt: now, LastConfirmedAt: now}}}
	old := []longterm.Fact{
		{ID: "f1", Content: "The user baked pies.", Category: longterm.CategoryPersonal, Confidence: 0.9, CreatedAt: now, LastConfirmedAt: now, InvalidAt: &now, SupersededBy: "f2"},
		{ID: "f0", Content: "The user baked cakes.", Category: longterm.CategoryPersonal, Confidence: 0.9, CreatedAt: now, LastConfirmedAt: now, InvalidAt: &now, SupersededBy: "f1"},
	}
	if err := db.SaveMemory(ctx, alice.uid, 0, u, longterm.Change{File: old}); err != nil {
		t.Fatal(err)
	}
	s.memory, s.fact = firestoredb.UsersCollection+"/"+firestoredb.UserDocID(alice.uid), "f1"
	sort.Strings(s.messages)
	return s
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestRules(t *testing.T) {
	t.Parallel()
	emulatortest.Require(t, "FIREBASE_AUTH_EMULATOR_HOST")
	client, project := emulatortest.Firestore(t)
	f := &fsREST{t: t, project: project,
		base: "http://" + os.Getenv("FIRESTORE_EMULATOR_HOST") + "/v1/projects/" + project + "/databases/(default)/documents"}
	f.loadRules()
	alice, bob, other := signUp(t), signUp(t), otherProjectUser()
	db := firestoredb.New(client)
	s := seed(t, db, alice, bob)
	// A purge marker, as a purge cut off half-way leaves it.
	if _, err := client.Collection(firestoredb.PurgesCollection).Doc("p1").Set(context.Background(), map[string]any{"userId": alice.uid}); err != nil {
		t.Fatal(err)
	}
	// An embedded exchange, as a turn's after-work saves it (in its user's
	// collection), and one where an earlier version kept it.
	unit := map[string]any{"userId": alice.uid, "sessionId": s.active, "embedding": firestore.Vector32{1, 0}}
	for _, col := range []*firestore.CollectionRef{client.Collection(firestoredb.UsageCollection).Doc(firestoredb.UserDocID(alice.uid)).Collection(firestoredb.RecallCollection),
		client.Collection(firestoredb.SessionsCollection).Doc(s.active).Collection(firestoredb.RecallCollection)} {
		if _, err := col.Doc("x1").Set(context.Background(), unit); err != nil {
			t.Fatal(err)
		}
	}
	// The draft of a reply streaming, which the owner's other tabs follow;
	// what recall in context keeps; a turn slot; the sweep's state.
	admin := map[string]map[string]any{
		firestoredb.SessionsCollection + "/" + s.active + "/" + firestoredb.ContextCollection + "/draft":    {"userId": alice.uid, "replyId": "r1", "text": "partial"},
		firestoredb.SessionsCollection + "/" + s.active + "/" + firestoredb.ContextCollection + "/recall":   {"userId": alice.uid, "recalled": []string{"x1"}},
		firestoredb.UsageCollection + "/" + s.usage + "/" + firestoredb.TurnSlotsCollection + "/s00":        {"userId": alice.uid, "minute": 1},
		firestoredb.UsageCollection + "/" + s.usage + "/" + firestoredb.SessionListsCollection + "/deleted": {"userId": alice.uid, "ids": []string{s.deleted}},
		firestoredb.SweepsCollection + "/state":                                                             {"userId": alice.uid, "backlog": 0},
	}
	for path, data := range admin {
		if _, err := client.Doc(path).Set(context.Background(), data); err != nil {
			t.Fatal(err)
		}
	}

	sess := func(id string) string { return firestoredb.SessionsCollection + "/" + id }
	usage := firestoredb.UsageCollection + "/" + s.usage
	// What the web app reads (the session list, a session, its messages,
	// a reply's draft): its owner, and nobody else.
	docs := map[string]string{
		"active session":   sess(s.active),
		"archived session": sess(s.archived),
		"deleted session":  sess(s.deleted),
		"message":          sess(s.active) + "/messages/" + s.messages[0],
		"reply draft":      sess(s.active) + "/context/draft",
	}
	// Every other document the server writes for a user, each carrying
	// the user's id: nobody reads it, its owner included.
	internal := map[string]string{
		"tail document":         sess(s.active) + "/context/window",
		"recall state":          sess(s.active) + "/context/recall",
		"compaction":            sess(s.active) + "/compactions/" + s.compaction,
		"embedded exchange":     usage + "/" + firestoredb.RecallCollection + "/x1",
		"earlier exchange":      sess(s.active) + "/" + firestoredb.RecallCollection + "/x1",
		"usage":                 usage,
		"usage day":             usage + "/" + firestoredb.UsageDaysCollection + "/" + s.day,
		"turn slot":             usage + "/" + firestoredb.TurnSlotsCollection + "/s00",
		"deleted sessions list": usage + "/" + firestoredb.SessionListsCollection + "/deleted",
		"memory":                s.memory,
		"superseded fact":       s.memory + "/facts/" + s.fact,
		"live facts":            s.memory + "/" + firestoredb.MemoryCollection + "/facts",
		"purge marker":          firestoredb.PurgesCollection + "/p1",
		"sweep state":           firestoredb.SweepsCollection + "/state",
		"account record":        firestoredb.AccountsCollection + "/" + s.usage,
	}
	callers := map[string]user{"owner": alice, "another user": bob, "unauthenticated": {}, "another project": other}

	t.Run("Get", func(t *testing.T) {
		for what, path := range docs {
			for who, u := range callers {
				r := f.get(u.token, path)
				if who == "owner" {
					if r.status != 200 || !strings.Contains(string(r.body), alice.uid) {
						t.Errorf("owner get %s: %d %s", what, r.status, r.body)
					}
				} else if !r.denied() {
					t.Errorf("%s get %s: %d %.200s, want PERMISSION_DENIED", who, what, r.status, r.body)
				}
			}
		}
		for what, path := range internal {
			if snap, err := client.Doc(path).Get(context.Background()); err != nil || !snap.Exists() {
				t.Fatalf("%s was not seeded at %s: %v", what, path, err) // so that denied below is not just missing
			}
			for who, u := range callers {
				if r := f.get(u.token, path); !r.denied() {
					t.Errorf("%s get %s: %d %.200s, want PERMISSION_DENIED", who, what, r.status, r.body)
				}
			}
		}
		// A reply's draft that is not there (before a reply streams, after
		// it ends): its owner's listener may read that it is missing.
		if r := f.get(alice.token, sess(s.archived)+"/context/draft"); r.status != 404 {
			t.Errorf("owner reads a missing draft: %d %s, want 404", r.status, r.body)
		}
		for who, u := range callers {
			if r := f.get(u.token, sess(s.archived)+"/context/draft"); who != "owner" && !r.denied() {
				t.Errorf("%s reads the owner's missing draft: %d", who, r.status)
			}
		}
		for _, path := range []string{"chat_health/ping", sess(s.bobs) + "/messages/none"} {
			if r := f.get(alice.token, path); !r.denied() {
				t.Errorf("owner get %s: %d", path, r.status)
			}
		}
		// Bob's session is Bob's.
		if r := f.get(bob.token, sess(s.bobs)); r.status != 200 {
			t.Errorf("bob reads his own session: %d", r.status)
		}
	})

	t.Run("ListSessions", func(t *testing.T) {
		r := f.query(alice.token, "", firestoredb.SessionsCollection, alice.uid, false)
		want := []string{s.active, s.archived, s.deleted}
		sort.Strings(want)
		if got := names(t, r); r.status != 200 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("owner's constrained list: %d %v, want %v", r.status, got, want)
		}
		for name, c := range map[string]struct {
			token, uid string
		}{
			"unconstrained":               {alice.token, ""},
			"another user's id":           {alice.token, bob.uid},
			"another user, owner's id":    {bob.token, alice.uid},
			"unauthenticated":             {"", alice.uid},
			"another project, owner's id": {other.token, alice.uid},
		} {
			if r := f.query(c.token, "", firestoredb.SessionsCollection, c.uid, false); !r.denied() {
				t.Errorf("list sessions %s: %d %.200s", name, r.status, r.body)
			}
		}
	})

	t.Run("ListUnderSession", func(t *testing.T) {
		r := f.query(alice.token, sess(s.active), "messages", "", false)
		if got := names(t, r); r.status != 200 || fmt.Sprint(got) != fmt.Sprint(s.messages) {
			t.Errorf("owner lists messages: %d %d of %d", r.status, len(got), len(s.messages))
		}
		r = f.query(alice.token, sess(s.active), "messages", alice.uid, false)
		if got := names(t, r); r.status != 200 || len(got) != len(s.messages) {
			t.Errorf("owner lists messages by userId: %d %d", r.status, len(got))
		}
		r = f.query(alice.token, sess(s.deleted), "messages", "", false)
		if got := names(t, r); r.status != 200 || len(got) != 1 {
			t.Errorf("owner lists a deleted session's messages (recovery): %d %v", r.status, got)
		}
		// The rest under a session is the server's: not listed, even by
		// its owner, even constrained to their id.
		for _, col := range []string{"compactions", "context", firestoredb.RecallCollection} {
			for _, uid := range []string{"", alice.uid} {
				if r := f.query(alice.token, sess(s.active), col, uid, false); !r.denied() {
					t.Errorf("owner lists %s (userId %q): %d %.200s", col, uid, r.status, r.body)
				}
			}
		}
		for who, u := range callers {
			if who == "owner" {
				continue
			}
			for _, target := range []string{s.active, s.deleted} {
				for _, col := range []string{"messages", "compactions", "context"} {
					if r := f.query(u.token, sess(target), col, "", false); !r.denied() {
						t.Errorf("%s lists %s of a session: %d", who, col, r.status)
					}
					if r := f.query(u.token, sess(target), col, alice.uid, false); !r.denied() {
						t.Errorf("%s lists %s by the owner's id: %d", who, col, r.status)
					}
				}
			}
		}
		// Collection-group queries over every session are not granted.
		if r := f.query(alice.token, "", "messages", alice.uid, true); !r.denied() {
			t.Errorf("collection-group query: %d", r.status)
		}
	})

	t.Run("ListMemory", func(t *testing.T) {
		for who, u := range callers {
			if r := f.query(u.token, s.memory, "facts", "", false); !r.denied() {
				t.Errorf("%s lists alice's facts: %d", who, r.status)
			}
			if r := f.query(u.token, s.memory, "facts", alice.uid, false); !r.denied() {
				t.Errorf("%s lists alice's facts by her id: %d", who, r.status)
			}
		}
		if r := f.query(alice.token, "", "users", alice.uid, false); !r.denied() {
			t.Errorf("listing memory documents: %d", r.status)
		}
		if r := f.query(alice.token, "", "facts", alice.uid, true); !r.denied() {
			t.Errorf("collection-group query of facts: %d", r.status)
		}
	})

	t.Run("ListUsage", func(t *testing.T) {
		for _, col := range []string{firestoredb.UsageDaysCollection, firestoredb.TurnSlotsCollection, firestoredb.SessionListsCollection} {
			if r := f.query(alice.token, usage, col, alice.uid, false); !r.denied() {
				t.Errorf("owner lists %s: %d %.200s", col, r.status, r.body)
			}
		}
		for name, c := range map[string]struct{ token, uid string }{
			"owner":           {alice.token, alice.uid},
			"unconstrained":   {alice.token, ""},
			"another user":    {bob.token, alice.uid},
			"another project": {other.token, alice.uid},
			"purge markers":   {alice.token, alice.uid},
		} {
			col := firestoredb.UsageCollection
			if name == "purge markers" {
				col = firestoredb.PurgesCollection
			}
			if r := f.query(c.token, "", col, c.uid, false); !r.denied() {
				t.Errorf("list %s: %d", name, r.status)
			}
		}
	})

	t.Run("Writes", func(t *testing.T) {
		fields := map[string]any{"fields": map[string]any{"userId": map[string]any{"stringValue": alice.uid}, "title": map[string]any{"stringValue": "x"}}}
		for who, u := range callers {
			for what, path := range merged(docs, internal) {
				if r := f.call("PATCH", f.base+"/"+path, u.token, fields); !r.denied() {
					t.Errorf("%s updates %s: %d", who, what, r.status)
				}
				if r := f.call("DELETE", f.base+"/"+path, u.token, nil); !r.denied() {
					t.Errorf("%s deletes %s: %d", who, what, r.status)
				}
			}
			creates := map[string]string{
				"a session":   firestoredb.SessionsCollection + "?documentId=new" + fmt.Sprint(time.Now().UnixNano()),
				"a message":   sess(s.active) + "/messages?documentId=forged",
				"a summary":   sess(s.active) + "/compactions?documentId=forged",
				"usage":       firestoredb.UsageCollection + "?documentId=" + u.uid,
				"a fact":      s.memory + "/facts?documentId=forged",
				"memory":      firestoredb.UsersCollection + "?documentId=" + u.uid + "x",
				"a new thing": "notes?documentId=n1",
			}
			for what, path := range creates {
				if r := f.call("POST", f.base+"/"+path, u.token, fields); !r.denied() {
					t.Errorf("%s creates %s: %d", who, what, r.status)
				}
			}
		}
		// Nothing changed.
		r := f.get(alice.token, docs["active session"])
		if r.status != 200 || strings.Contains(string(r.body), `"x"`) {
			t.Errorf("the session changed: %s", r.body)
		}
	})
}
