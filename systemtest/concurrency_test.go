package systemtest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
)

// TestManyWriters: 20 writers each append 5 batches of 3 messages to one
// session at once, as an agent's workers do, retrying as a well-behaved
// client does (honouring Retry-After, at most 10 tries). All succeed,
// seqs stay gapless and each batch contiguous; contention makes writers
// wait their turn, it never starves them.
func TestManyWriters(t *testing.T) { onBothStores(t, testManyWriters) }

func testManyWriters(t *testing.T, backend string) {
	h := newHarnessOn(t, backend, func(c *app.Config) {
		c.MessagesPerMinute = 1000
		c.FirestoreTimeout = app.DefaultFirestoreTimeout // as deployed
	})
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "many writers"})
	const writers, batches, size = 20, 5, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	first, tries := 0, 0
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var msgs []map[string]any
				for i := range size {
					msgs = append(msgs, map[string]any{"role": []string{"user", "assistant"}[i%2], "content": fmt.Sprintf("w%d b%d m%d", w, b, i)})
				}
				body := map[string]any{"messages": msgs, "clientMessageId": fmt.Sprintf("w%d-b%d", w, b)}
				r, n := h.retrying("POST", "/sessions/"+id+"/messages", alice.token, body, 10)
				if r.status != 201 {
					t.Errorf("writer %d batch %d after %d tries: %d %s", w, b, n, r.status, r.body)
				}
				mu.Lock()
				tries += n
				if n == 1 {
					first++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%s: %d appends by %d writers in %v; %d of them at the first try, %d requests in all",
		backend, writers*batches, writers, time.Since(start).Round(time.Millisecond), first, tries)
	all := h.listing(alice.token, id, "all")
	if len(all) != writers*batches*size {
		t.Fatalf("%d messages stored, want %d", len(all), writers*batches*size)
	}
	for i := 0; i < len(all); i += size {
		var w, b int
		fmt.Sscanf(all[i].Content, "w%d b%d m0", &w, &b)
		for j := range size {
			m := all[i+j]
			if m.Seq != i+j || m.Content != fmt.Sprintf("w%d b%d m%d", w, b, j) {
				t.Fatalf("message %d is %q (seq %d): batches are not whole and in order", i+j, m.Content, m.Seq)
			}
		}
	}
	if s := h.session(id); s.MessageCount != len(all) || s.NextSeq != len(all) {
		t.Errorf("the session counts %d messages, next seq %d", s.MessageCount, s.NextSeq)
	}
}

// TestConcurrentTree: turns, regenerations, edits, branch switches, stops
// and appends on one session at once, in random interleavings: whatever
// each request is answered, the tree stays sound (checkParents), every
// message stored once, and no lease is left behind.
func TestConcurrentTree(t *testing.T) { onBothStores(t, testConcurrentTree) }

func testConcurrentTree(t *testing.T, backend string) {
	h := newHarnessOn(t, backend, func(c *app.Config) {
		c.MessagesPerMinute = 1000
		c.DraftInterval = 20 * time.Millisecond
	})
	h.script(&script{chat: func(r openai.ChatCompletionRequest) llmtest.Response {
		resp := llmtest.Echo(r)
		resp.Content += " and a few more words to stream"
		resp.ChunkDelay = 5 * time.Millisecond
		return resp
	}})
	alice := h.signUp()
	for run := range 2 {
		id := h.turn(alice.token, map[string]any{"message": fmt.Sprint("run ", run)}).SessionID
		var wg sync.WaitGroup
		var mu sync.Mutex
		stored := map[string]bool{} // user contents answered 200
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(run), uint64(w)))
				for i := range 6 {
					key := fmt.Sprintf("r%d-w%d-%d", run, w, i)
					text := "message " + key
					all := h.listing(alice.token, id, "all")
					pick := all[rng.IntN(len(all))]
					var body map[string]any
					path := "/chat"
					switch op := rng.IntN(20); {
					case op < 7:
						body = map[string]any{"sessionId": id, "message": text, "clientMessageId": key}
					case op < 10:
						body = map[string]any{"sessionId": id, "regenerate": pick.ID, "clientMessageId": key}
					case op < 13:
						if pick.Role != "user" {
							continue
						}
						body = map[string]any{"sessionId": id, "edit": pick.ID, "message": text, "clientMessageId": key}
					case op < 16:
						h.sent.Add(1)
						doRequest(t, h.srv.URL, "POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": pick.Seq}, nil)
						continue
					case op < 18:
						stopped(t, h, alice.token, id, text)
						mu.Lock()
						stored[text] = true
						mu.Unlock()
						continue
					default:
						path = "/sessions/" + id + "/messages"
						body = map[string]any{"clientMessageId": key, "messages": []map[string]any{
							{"role": "user", "content": text}, {"role": "assistant", "content": "appended answer to " + key}}}
					}
					r, _ := h.retrying("POST", path, alice.token, body, 30)
					switch {
					case r.status == 200 || r.status == 201:
						if body["message"] != nil || path != "/chat" {
							mu.Lock()
							stored[text] = true
							mu.Unlock()
						}
					case r.status >= 500 || r.status == 409:
						t.Errorf("%s %v: %d %s", path, body, r.status, r.body)
					}
				}
			}()
		}
		wg.Wait()
		h.idle()
		all := h.checkParents(alice.token, id)
		seen := map[string]int{}
		for _, m := range all {
			if m.Role == "user" {
				seen[m.Content]++
			}
		}
		for text := range stored {
			if seen[text] != 1 {
				t.Errorf("%q is stored %d times", text, seen[text])
			}
		}
	}
}

// stopped sends a streaming turn and stops its reply after the first
// piece (waiting its turn while the session is busy).
func stopped(t *testing.T, h *harness, token, id, text string) {
	for try := 0; ; try++ {
		data, _ := json.Marshal(map[string]any{"sessionId": id, "message": text, "clientMessageId": "stop-" + strings.ReplaceAll(text, " ", "-"), "stream": true})
		req, _ := http.NewRequest("POST", h.srv.URL+"/chat", strings.NewReader(string(data)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		h.sent.Add(1)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		if resp.StatusCode == 409 && resp.Header.Get("Retry-After") != "" && try < 30 {
			resp.Body.Close()
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if resp.StatusCode != 200 {
			t.Errorf("a streamed turn: %d", resp.StatusCode)
			resp.Body.Close()
			return
		}
		var replyID string
		evs := readEvents(t, resp.Body, func(e event) bool {
			var s struct {
				ReplyID string `json:"replyId"`
			}
			if e.name == "session" {
				json.Unmarshal(e.data, &s)
				replyID = s.ReplyID
			}
			if e.name == "delta" && replyID != "" {
				h.sent.Add(1)
				doRequest(t, h.srv.URL, "POST", "/sessions/"+id+"/replies/"+replyID+"/stop", token, nil, nil)
				replyID = ""
			}
			return false
		})
		resp.Body.Close()
		if last := evs[len(evs)-1]; last.name != "done" {
			t.Errorf("a stopped turn ended with %s %s", last.name, last.data)
		}
		return
	}
}

// TestAppendRoundTrips: an append by the client is one batched read and
// one commit, its per-user limits and spend included; a retry under its
// key reads its batch (the first message with the rest, then the rest)
// and writes nothing.
func TestAppendRoundTrips(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "appends"})
	h.idle()
	for i, key := range []string{"", "batch-1", "batch-1"} {
		body := map[string]any{"messages": []map[string]any{{"role": "user", "content": fmt.Sprint("question ", i)},
			{"role": "assistant", "content": fmt.Sprint("answer ", i)}}}
		if key != "" {
			body["clientMessageId"] = key
			body["messages"] = []map[string]any{{"role": "user", "content": "keyed"}, {"role": "assistant", "content": "answer"}}
		}
		before := h.counter.Snapshot()
		h.do("POST", "/sessions/"+id+"/messages", alice.token, body).want(t, 201)
		c := h.counter.Snapshot().Sub(before)
		if c.RoundTrips != 2 || (i == 2) != (c.Writes == 0) {
			t.Errorf("append %d: %s; want 2 round trips, writes only when not a replay", i, c)
		}
	}
	if all := h.listing(alice.token, id, "all"); len(all) != 4 {
		t.Errorf("%d messages stored, want 4", len(all))
	}
}
