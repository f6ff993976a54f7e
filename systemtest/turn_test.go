package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/llm/llmtest"
)

// TestTurnRoundTrips: a turn makes at most 2 Firestore round trips before
// the model is called (one batched read, then one commit; on the instance
// that ran the session's last turn, the commit with a read of 3 documents
// beside it) and 1 after it (one commit), at 4 messages and at 5,000,
// with long-term memory on, and touches the same few documents at both
// lengths; and a context costs one read whatever the session's length.
func TestTurnRoundTrips(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.MaxSessionMessages = 10_000; c.LongTermMemory = true })
	var atModel atomic.Value // the counts when the model was called
	h.script(&script{chat: func(r openai.ChatCompletionRequest) llmtest.Response {
		atModel.Store(h.counter.Snapshot())
		return llmtest.Echo(r)
	}})
	alice := h.signUp()
	mem := map[string]any{"title": "measured", "memory": map[string]any{"strategy": "token_buffer", "budgetTokens": 2000}, "noLearning": true}
	short, long := h.newSession(alice.token, mem), h.newSession(alice.token, mem)
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": short, "message": "hello"}).want(t, 200)
	for b := 0; b < 100; b++ {
		batch := make([]map[string]any, 50)
		for i := range batch {
			role := []string{"user", "assistant"}[i%2]
			batch[i] = map[string]any{"role": role, "content": fmt.Sprintf("stored message %d of batch %d", i, b)}
		}
		h.do("POST", "/sessions/"+long+"/messages", alice.token, map[string]any{"messages": batch}).want(t, 201)
	}
	h.idle()

	// Round trips and documents (bytes grow with the message).
	type calls struct{ Reads, Writes, Deletes, RoundTrips int64 }
	of := func(c firestoretest.Counts) calls { return calls{c.Reads, c.Writes, c.Deletes, c.RoundTrips} }
	type cost struct{ before, after, afterTurn calls }
	measure := func(body map[string]any) cost {
		t.Helper()
		start := h.counter.Snapshot()
		h.do("POST", "/chat", alice.token, body).want(t, 200)
		done := h.counter.Snapshot()
		h.idle()
		at := atModel.Load().(firestoretest.Counts)
		return cost{before: of(at.Sub(start)), after: of(done.Sub(at)), afterTurn: of(h.counter.Snapshot().Sub(done))}
	}
	turns := 0
	turn := func(id string, stream bool) cost {
		t.Helper()
		turns++
		h.clock.Advance(time.Minute) // the slots known taken are free again
		return measure(map[string]any{"sessionId": id, "message": "one more", "clientMessageId": fmt.Sprint("k-", turns), "stream": stream})
	}
	for _, stream := range []bool{false, true} {
		// Cold: a new instance knows nothing of the sessions or the user.
		h.restart()
		cold := [2]cost{turn(short, stream), turn(long, stream)}
		// Warm: the instance ran each session's last turn.
		warm := [2]cost{turn(short, stream), turn(long, stream)}
		t.Logf("stream=%v: cold at 4 messages %+v; at 5,000 %+v", stream, cold[0], cold[1])
		t.Logf("stream=%v: warm at 4 messages %+v; at 5,000 %+v", stream, warm[0], warm[1])
		for _, c := range append(cold[:], warm[:]...) {
			if c.before.RoundTrips > 2 || c.after.RoundTrips > 1 || c.afterTurn.RoundTrips != 0 {
				t.Errorf("stream=%v: %d round trips before the model, %d after, %d after the answer; want ≤ 2, ≤ 1, 0",
					stream, c.before.RoundTrips, c.after.RoundTrips, c.afterTurn.RoundTrips)
			}
		}
		for _, cs := range [][2]cost{cold, warm} {
			if cs[0] != cs[1] {
				t.Errorf("stream=%v: a turn costs more at 5,000 messages: %+v vs %+v", stream, cs[1], cs[0])
			}
		}
		// Documents, cold: the read is the session, its tail document, the day's
		// spend, the memory block, 2 rate-limit slots and the keyed reply
		// (and the draft when streaming; the key's question is read only
		// by a retry). Warm, the claim is planned from what the instance
		// kept, and only the spend, the memory block and the keyed reply
		// are read, beside its commit. Each commit writes the session and
		// a message, the claim a slot, the finish the tail document (with both
		// messages) and the spend (a streaming turn starts its draft in
		// the claim and deletes it in the finish).
		writes, deletes := int64(7), int64(0)
		reads := [2]int64{7, 3}
		if stream {
			writes, deletes, reads[0] = 8, 1, 8
		}
		for i, cs := range [][2]cost{cold, warm} {
			for n, c := range map[int]cost{4: cs[0], 5000: cs[1]} {
				r := c.before.Reads + c.after.Reads + c.afterTurn.Reads
				w := c.before.Writes + c.after.Writes + c.afterTurn.Writes
				d := c.before.Deletes + c.after.Deletes + c.afterTurn.Deletes
				if r != reads[i] || w != writes || d != deletes {
					t.Errorf("stream=%v, %s, about %d messages: %d reads, %d writes, %d deletes; want %d, %d, %d",
						stream, []string{"cold", "warm"}[i], n, r, w, d, reads[i], writes, deletes)
				}
			}
		}
	}
	// A session created on this instance is kept as created: its first
	// turn here claims without reading it.
	fresh := h.newSession(alice.token, mem)
	if c := turn(fresh, false); c.before.Reads+c.after.Reads+c.afterTurn.Reads != 3 {
		t.Errorf("the first turn of a session created here: %+v; want 3 reads", c)
	}
	// A regeneration or an edit first reads the branch it continues (the
	// session and its target, the summaries, the branch's messages within
	// the budget, newest first, in pages of 100): bounded by the budget,
	// not the length. The commits are a turn's. How many pages the budget
	// takes depends on the replies' sizes (the model echoes its prompt),
	// so it is counted from the branch as listed.
	for name, id := range map[string]string{"short": short, "long": long} {
		active := h.listing(alice.token, id, "active")
		last := active[len(active)-1]
		for _, tc := range []struct {
			body map[string]any
			leaf int // the last message of the branch the turn continues
		}{
			{map[string]any{"sessionId": id, "regenerate": last.ID, "clientMessageId": "regen-" + id}, len(active) - 2},
			{map[string]any{"sessionId": id, "edit": active[len(active)-2].ID, "message": "edited", "clientMessageId": "edit-" + id}, len(active) - 3},
		} {
			read, tokens := 0, 0 // the messages the budget (2,000 tokens) takes, newest first
			for i := tc.leaf; i >= 0 && tokens <= 2000; i-- {
				read, tokens = read+1, tokens+active[i].Tokens
			}
			pages := int64(read/100 + 1)
			c := measure(tc.body)
			t.Logf("%s session, regenerate=%v: %+v (the budget takes %d messages, read %d pages of 100 at most)", name, tc.body["regenerate"] != nil, c, read, pages)
			if c.before.RoundTrips > 3+pages || c.after.RoundTrips > 1 || c.afterTurn.RoundTrips != 0 {
				t.Errorf("a branching turn in the %s session: %d round trips before the model, %d after, %d after the answer; want ≤ %d (3 and a page of 100 messages within the budget), ≤ 1, 0",
					name, c.before.RoundTrips, c.after.RoundTrips, c.afterTurn.RoundTrips, 3+pages)
			}
		}
	}
	ctxCost := func(id string) calls {
		before := h.counter.Snapshot()
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200)
		return of(h.counter.Snapshot().Sub(before))
	}
	if cs, cl := ctxCost(short), ctxCost(long); cs != cl || cs.RoundTrips != 1 {
		t.Errorf("context: %+v at 6 messages, %+v at 5,004; want the same, in one round trip", cs, cl)
	}
}

// gate holds the model's chat replies until opened, and counts them.
type gate struct {
	calls  atomic.Int64
	called chan struct{} // receives once per call
	open   chan struct{}
}

func newGate(h *harness) *gate {
	g := &gate{called: make(chan struct{}, 100), open: make(chan struct{})}
	h.script(&script{chat: func(r openai.ChatCompletionRequest) llmtest.Response {
		g.calls.Add(1)
		g.called <- struct{}{}
		<-g.open
		return llmtest.Echo(r)
	}})
	return g
}

// TestDuplicateTurns: ten concurrent requests with one clientMessageId
// (half of them streaming) make exactly one model call. While it runs, the
// others are told 409 with a Retry-After; once it is done, a retry gets the
// stored turn. One message and one reply are stored.
func TestDuplicateTurns(t *testing.T) {
	h := newHarness(t)
	g := newGate(h)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "dupes"})
	body := func(stream bool) map[string]any {
		return map[string]any{"sessionId": id, "message": "only once", "clientMessageId": "dup-1", "stream": stream}
	}
	first := make(chan response, 1)
	go func() { first <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, body(false), nil) }()
	<-g.called // the first claimed the key and is with the model
	var wg sync.WaitGroup
	codes := make(chan response, 9)
	for i := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, body(i%2 == 0), nil)
		}()
	}
	wg.Wait()
	close(codes)
	for r := range codes {
		if r.status != http.StatusConflict || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "in progress") {
			t.Errorf("a duplicate while the turn runs: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	close(g.open)
	var done chatResp
	(<-first).want(t, 200).decode(t, &done)
	var again chatResp
	h.do("POST", "/chat", alice.token, body(false)).want(t, 200).decode(t, &again)
	if !again.Replayed || again.Reply.ID != done.Reply.ID || again.UserMessage.ID != done.UserMessage.ID {
		t.Errorf("a retry after the turn: %+v, want the stored turn %+v", again, done)
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d model calls for one turn", n)
	}
	if msgs := h.messages(alice.token, id); len(msgs) != 2 {
		t.Errorf("%d messages stored", len(msgs))
	}
	// The same key with another message is a conflict even while... after.
	if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "something else", "clientMessageId": "dup-1"}); r.status != 409 || strings.Contains(string(r.body), "in progress") {
		t.Errorf("another message under a used key: %d %s", r.status, r.body)
	}
}

// TestKeyReuseWhileInProgress: another message under the key of a turn in
// progress is a conflict too, not "in progress".
func TestKeyReuseWhileInProgress(t *testing.T) {
	h := newHarness(t)
	g := newGate(h)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "reuse"})
	first := make(chan response, 1)
	go func() {
		first <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "the question", "clientMessageId": "k1"}, nil)
	}()
	<-g.called
	r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "another question", "clientMessageId": "k1"})
	if r.status != 409 || !strings.Contains(string(r.body), "already used") {
		t.Errorf("another message under a key in progress: %d %s", r.status, r.body)
	}
	close(g.open)
	(<-first).want(t, 200)
}

// TestReplyIDsCannotBeNamedByClients: a client key that looks like the
// key the server once derived for a reply ("q:reply") is an ordinary key.
func TestReplyIDsCannotBeNamedByClients(t *testing.T) {
	h := newHarness(t)
	h.script(&script{})
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "keys"})
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "question", "clientMessageId": "q"}).want(t, 200)
	var r chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "another", "clientMessageId": "q:reply"}).want(t, 200).decode(t, &r)
	if r.Replayed || r.UserMessage.Content != "another" || r.Reply.Content != "echo: another" {
		t.Errorf("key q:reply: %+v", r)
	}
	if msgs := h.messages(alice.token, id); len(msgs) != 4 {
		t.Errorf("%d messages, want 4", len(msgs))
	}
}

// TestClientGoneAfterSending: a client that goes away at the moment its
// message is being committed still gets its message stored and answered.
func TestClientGoneAfterSending(t *testing.T) {
	h := newHarness(t)
	h.script(&script{})
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "gone"})
	for i, method := range []string{"BatchGetDocuments", "Commit"} {
		ctx, cancel := context.WithCancel(context.Background())
		var once sync.Once
		h.counter.OnCall = func(m string) {
			if strings.HasSuffix(m, "/"+method) {
				once.Do(cancel)
			}
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/chat",
			strings.NewReader(fmt.Sprintf(`{"sessionId":%q,"message":"gone %d"}`, id, i)))
		req.Header.Set("Authorization", "Bearer "+alice.token)
		req.Header.Set("Content-Type", "application/json")
		h.sent.Add(1)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		h.idle()
		h.counter.OnCall = nil
		cancel()
		want := 2 * (i + 1)
		if msgs := h.messages(alice.token, id); len(msgs) != want || msgs[len(msgs)-1].Content != fmt.Sprintf("echo: gone %d", i) {
			t.Fatalf("client gone at %s: %d messages %+v, want the message and its reply", method, len(msgs), msgs)
		}
	}
}

// TestOneUserManySessions: one user's concurrent turns in different
// sessions do not queue behind each other on a per-user document: they
// cost the same round trips as as many users' turns.
func TestOneUserManySessions(t *testing.T) {
	h := newHarness(t)
	h.script(&script{})
	const n = 20
	run := func(users []user) (firestoretest.Counts, time.Duration) {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = h.newSession(users[i%len(users)].token, map[string]any{"title": "concurrent"})
		}
		h.idle()
		before, start := h.counter.Snapshot(), time.Now()
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.do("POST", "/chat", users[i%len(users)].token, map[string]any{"sessionId": id, "message": "in parallel"}).want(t, 200)
			}()
		}
		wg.Wait()
		took := time.Since(start)
		h.idle()
		return h.counter.Snapshot().Sub(before), took
	}
	many := make([]user, n)
	for i := range many {
		many[i] = h.signUp()
	}
	one := []user{h.signUp()}
	cm, tm := run(many)
	co, to := run(one)
	t.Logf("%d users: %+v in %s; one user: %+v in %s", n, cm, tm, co, to)
	// A few turns of the one user may pick the same free slot at once
	// and commit again; a queue on one document would cost far more.
	if co.RoundTrips > cm.RoundTrips+n/2 {
		t.Errorf("one user's %d turns took %d round trips, %d users' %d", n, co.RoundTrips, n, cm.RoundTrips)
	}
}
