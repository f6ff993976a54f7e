package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/llm/llmtest"
)

// The fault rates of TestChaos (and of `make chaos`).
const (
	chaosFail       = 0.10 // Firestore RPCs refused before they are sent
	chaosAmbiguous  = 0.03 // commits that land but lose their answer
	chaosCut        = 0.03 // read streams cut after their first message
	chaosDelay      = 0.02 // RPCs delayed by 1–6 s
	chaosModelRate  = 0.05 // model calls that fail: 500, 429, cut, early end or stall
	chaosDisconnect = 0.05 // streamed attempts whose client goes away mid-reply
	chaosSessions   = 12
	chaosTries      = 10               // a client's tries for one logical turn…
	chaosBudget     = 60 * time.Second // …within this long
	chaosDeadline   = 45 * time.Second // no attempt may take longer
)

// TestChaos drives logical turns (CHAOS_TURNS, default 48; `make chaos`
// runs 300) over 12 sessions through faults between the server and
// Firestore and the model and clients that go away (in a third of the
// sessions each logical turn is a tool round: the model asks for a call,
// the client sends its result, the model answers), with a well-behaved
// client: one clientMessageId per logical turn, again after a network
// error, a 5xx, a 409 with Retry-After or a retryable error event (waiting
// as told), at most 10 tries in 60 s. With the faults off it reads
// everything back and checks that every turn succeeded and is stored
// exactly once, as its client received it, in a sound tree with exact
// counters, that no lease was left behind, and that no answer was wrong.
func TestChaos(t *testing.T) {
	turns := 48
	if n, err := strconv.Atoi(os.Getenv("CHAOS_TURNS")); err == nil && n > 0 {
		turns = n
	}
	h := newHarness(t, func(c *app.Config) {
		c.ModelTimeout = 3 * time.Second
		c.FirestoreTimeout = app.DefaultFirestoreTimeout
		c.DraftInterval = 200 * time.Millisecond
	})
	faults := &firestoretest.Faults{Fail: chaosFail, Ambiguous: chaosAmbiguous, Cut: chaosCut, Delay: chaosDelay,
		MinDelay: time.Second, MaxDelay: 6 * time.Second}
	h.counter.Faults = faults
	model := &chaosModel{rate: chaosModelRate}
	h.model.SetReply(model.reply)

	users := []user{h.signUp(), h.signUp(), h.signUp()}
	type conv struct {
		u  user
		id string
	}
	var convs []conv
	for i := range chaosSessions {
		u := users[i%len(users)]
		convs = append(convs, conv{u, h.newSession(u.token, map[string]any{"title": fmt.Sprint("chaos ", i)})})
	}
	c := &chaosClient{h: h, rng: rand.New(rand.NewPCG(1, 2))}
	received := map[string]string{} // question → reply as its client received it
	var mu sync.Mutex
	start := time.Now()
	for round := 0; round*chaosSessions < turns; round++ {
		faults.Enable(true)
		model.enable(true)
		var wg sync.WaitGroup
		for i, cv := range convs {
			if round*chaosSessions+i >= turns {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := fmt.Sprintf("question %d of session %d", round, i)
				if reply, ok := c.turn(t, cv.u.token, cv.id, q, fmt.Sprintf("k-%d-%d", i, round), chaosTools(i)); ok {
					mu.Lock()
					received[q] = reply
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		faults.Enable(false)
		model.enable(false)
		h.idle()
		for _, cv := range convs {
			if s := h.session(cv.id); s.Bookkeeping.Answering != nil {
				t.Errorf("round %d: session %s has a lease left behind: %+v", round, cv.id, s.Bookkeeping.Answering)
			}
		}
		h.clock.Advance(61 * time.Second) // a new minute for the turn limits
	}
	wall := time.Since(start)

	// Read everything back, faults off.
	stored := 0
	for i, cv := range convs {
		all := h.checkParents(cv.u.token, cv.id)
		stored += len(all)
		bySeq := map[int]branchMsg{}
		for _, m := range all {
			bySeq[m.Seq] = m
		}
		for round := 0; round*chaosSessions+i < turns; round++ {
			q := fmt.Sprintf("question %d of session %d", round, i)
			var asked []branchMsg
			for _, m := range all {
				if m.Role == "user" && m.Content == q {
					asked = append(asked, m)
				}
			}
			if len(asked) != 1 {
				t.Errorf("%q is stored %d times", q, len(asked))
				continue
			}
			replies := childrenOf(all, asked[0].Seq, "assistant")
			if chaosTools(i) && len(replies) == 1 { // the call, its result, then the answer
				results := childrenOf(all, replies[0].Seq, "tool")
				if len(results) != 1 {
					t.Errorf("%q: its call has %d results", q, len(results))
					continue
				}
				replies = childrenOf(all, results[0].Seq, "assistant")
			}
			got, ok := received[q]
			switch {
			case len(replies) != 1:
				t.Errorf("%q has %d replies", q, len(replies))
			case ok && replies[0].Content != got:
				t.Errorf("%q: stored reply %q, its client received %q", q, replies[0].Content, got)
			}
		}
	}
	want := 0
	for n := range turns {
		want += 2
		if chaosTools(n % chaosSessions) {
			want += 2
		}
	}
	if stored != want {
		t.Errorf("%d messages stored, want %d", stored, want)
	}
	st := c.stats()
	f := faults.Injected()
	t.Logf("chaos: %d logical turns over %d sessions in %v: %d succeeded (%d at the first try), %d failed for good; %d requests: %d answered 409 in progress, %d 502, %d 503, %d error events, %d disconnected by their client, longest %v; injected into %d RPCs: %d refused, %d of %d commits' answers lost, %d of %d streams cut, %d delays; %d of %d model calls failed",
		turns, chaosSessions, wall.Round(time.Second), st.ok, st.firstTry, turns-st.ok, st.requests, st.busy, st.badGateway, st.unavailable, st.events,
		st.disconnects, st.longest.Round(time.Millisecond), f.RPCs, f.Failed, f.Ambiguous, f.Commits, f.Cut, f.Streams, f.Late, model.failed(), model.calls())
	if st.ok != turns {
		t.Errorf("%d of %d logical turns failed for good", turns-st.ok, turns)
	}
	for _, p := range st.problems {
		t.Error(p)
	}
}

// chaosModel is the model of TestChaos: it echoes, streaming in pieces,
// and fails a share of its calls in one of five ways.
type chaosModel struct {
	rate   float64
	mu     sync.Mutex
	on     bool
	rng    *rand.Rand
	faults int
	n      int // calls while on
}

func (m *chaosModel) enable(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = on
}

func (m *chaosModel) failed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.faults
}

func (m *chaosModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

func (m *chaosModel) reply(r openai.ChatCompletionRequest) llmtest.Response {
	resp := llmtest.Echo(r)
	resp.Content += " and a few more words to stream"
	switch last := r.Messages[len(r.Messages)-1]; {
	case last.Role == openai.ChatMessageRoleTool:
		resp.Content = "the tool said " + last.Content
	case len(r.Tools) > 0 && last.Role == openai.ChatMessageRoleUser:
		resp.Content = ""
		resp.ToolCalls = []openai.ToolCall{{ID: fmt.Sprintf("call_%x", len(last.Content)*7919+len(r.Messages)), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "lookup", Arguments: `{"q":"` + strings.ReplaceAll(last.Content, " ", "_") + `"}`}}}
	}
	resp.ChunkDelay = 10 * time.Millisecond
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rng == nil {
		m.rng = rand.New(rand.NewPCG(3, 4))
	}
	if !m.on {
		return resp
	}
	m.n++
	if m.rng.Float64() >= m.rate {
		return resp
	}
	m.faults++
	switch m.rng.IntN(5) {
	case 0:
		return llmtest.Response{Status: 500}
	case 1:
		return llmtest.Response{Status: 429}
	case 2:
		resp.Cut = true
	case 3:
		resp.EndEarly = true
	default:
		resp.Delay = 5 * time.Second // past the model timeout
	}
	return resp
}

// chaosClient is a well-behaved client: one key per logical turn, retries
// as told, and sometimes goes away in the middle of a streamed reply.
type chaosClient struct {
	h   *harness
	mu  sync.Mutex
	rng *rand.Rand
	st  chaosStats
}

type chaosStats struct {
	ok, firstTry, requests, busy, badGateway, unavailable, events, disconnects int
	longest                                                                    time.Duration
	problems                                                                   []string
}

func (c *chaosClient) stats() chaosStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *chaosClient) roll(p float64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64() < p
}

func (c *chaosClient) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.problems = append(c.st.problems, fmt.Sprintf(format, args...))
}

// chaosTools tells the sessions whose turns are tool rounds.
func chaosTools(session int) bool { return session%3 == 2 }

var chaosTool = []map[string]any{{"name": "lookup", "parameters": map[string]any{"type": "object"}}}

// childrenOf are the messages of all with role whose parent is seq.
func childrenOf(all []branchMsg, seq int, role string) []branchMsg {
	var out []branchMsg
	for _, m := range all {
		if m.Role == role && m.ParentSeq == seq {
			out = append(out, m)
		}
	}
	return out
}

// attempt is what one try of a logical turn learned.
type attempt struct {
	calls []string      // the ids of the calls the reply asks for
	reply string        // the reply received, if the turn succeeded
	retry time.Duration // > 0: try again after this long
	final string        // set: a final answer that is not success
}

// turn runs one logical turn to its end and returns the reply received:
// with tools, the message's turn, whose reply asks for a call, and then
// the turn of the call's result.
func (c *chaosClient) turn(t *testing.T, token, sessionID, question, key string, tools bool) (string, bool) {
	body := map[string]any{"sessionId": sessionID, "message": question, "clientMessageId": key}
	if !tools {
		a, ok := c.request(token, question, body)
		return a.reply, ok
	}
	body["tools"] = chaosTool
	a, ok := c.request(token, question, body)
	if !ok || len(a.calls) != 1 {
		c.problem("%q: the reply asks for calls %v", question, a.calls)
		return "", false
	}
	results := []map[string]string{{"toolCallId": a.calls[0], "content": "result for " + question}}
	a, ok = c.request(token, question, map[string]any{"sessionId": sessionID, "toolResults": results, "clientMessageId": key + "-r", "tools": chaosTool})
	if ok && a.reply != "the tool said result for "+question {
		c.problem("%q: answered %q after its result", question, a.reply)
	}
	return a.reply, ok
}

// request sends one request of a logical turn until it succeeds, as told.
func (c *chaosClient) request(token, question string, body map[string]any) (attempt, bool) {
	deadline := time.Now().Add(chaosBudget)
	for try := 1; try <= chaosTries; try++ {
		stream := c.roll(0.5)
		body["stream"] = stream
		a := c.try(token, body, stream)
		switch {
		case a.final != "":
			c.problem("%q try %d: a final answer: %s", question, try, a.final)
			return attempt{}, false
		case a.retry == 0:
			c.mu.Lock()
			if len(a.calls) == 0 { // a logical turn's last request
				c.st.ok++
				if try == 1 {
					c.st.firstTry++
				}
			}
			c.mu.Unlock()
			return a, true
		case time.Now().Add(a.retry).After(deadline):
			c.problem("%q: out of time after %d tries", question, try)
			return attempt{}, false
		}
		time.Sleep(a.retry)
	}
	c.problem("%q: out of tries", question)
	return attempt{}, false
}

// try sends one attempt and classifies its answer.
func (c *chaosClient) try(token string, body map[string]any, stream bool) attempt {
	c.h.sent.Add(1)
	c.mu.Lock()
	c.st.requests++
	c.mu.Unlock()
	started := time.Now()
	defer func() {
		took := time.Since(started)
		c.mu.Lock()
		c.st.longest = max(c.st.longest, took)
		c.mu.Unlock()
		if took > chaosDeadline {
			c.problem("an attempt took %v", took)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), chaosDeadline)
	defer cancel()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", c.h.srv.URL+"/chat", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return attempt{retry: time.Second} // a network error
	}
	defer resp.Body.Close()
	retry := func(header string) time.Duration {
		n, _ := strconv.Atoi(header)
		return time.Duration(n) * time.Second
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return c.judge(resp.StatusCode, retry(resp.Header.Get("Retry-After")), b)
	}
	// A stream: session, deltas, then done or error.
	disconnect := c.roll(chaosDisconnect)
	var text strings.Builder
	var out attempt
	got := false
	sawDone := false
	readEvents(c.h.t, resp.Body, func(e event) bool {
		switch e.name {
		case "delta":
			var d struct {
				Text string `json:"text"`
			}
			json.Unmarshal(e.data, &d)
			text.WriteString(d.Text)
			if disconnect {
				cancel() // the client goes away mid-reply
				return true
			}
		case "done":
			var r toolTurn
			json.Unmarshal(e.data, &r)
			sawDone, got = true, true
			out = attempt{reply: r.Reply.Content, calls: callIDs(r)}
			if !r.Replayed && text.String() != r.Reply.Content {
				c.problem("streamed %q, done says %q", text.String(), r.Reply.Content)
			}
			return true
		case "error":
			var b errorResp
			json.Unmarshal(e.data, &b)
			c.mu.Lock()
			c.st.events++
			c.mu.Unlock()
			got = true
			if b.Error.RetryAfter < 1 || b.Error.Code == "internal" {
				out = attempt{final: "error event " + string(e.data)}
			} else {
				out = attempt{retry: time.Duration(b.Error.RetryAfter) * time.Second}
			}
			return true
		}
		return false
	})
	if disconnect && !sawDone {
		c.mu.Lock()
		c.st.disconnects++
		c.mu.Unlock()
		return attempt{retry: time.Second}
	}
	if !got { // the stream broke
		return attempt{retry: time.Second}
	}
	return out
}

// judge classifies a JSON answer.
func (c *chaosClient) judge(status int, retry time.Duration, body []byte) attempt {
	var b struct {
		toolTurn
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(body, &b)
	c.mu.Lock()
	switch status {
	case 409:
		if retry > 0 {
			c.st.busy++
		}
	case 502:
		c.st.badGateway++
	case 503:
		c.st.unavailable++
	}
	c.mu.Unlock()
	switch {
	case status == 200:
		return attempt{reply: b.Reply.Content, calls: callIDs(b.toolTurn)}
	case b.Error.Code == "internal":
		return attempt{final: fmt.Sprintf("%d internal: %s", status, body)}
	case (status >= 500 || status == 409) && retry > 0:
		return attempt{retry: retry}
	case status >= 500:
		return attempt{final: fmt.Sprintf("%d without Retry-After: %s", status, body)}
	}
	return attempt{final: fmt.Sprintf("%d %s", status, body)}
}

func callIDs(r toolTurn) []string {
	var out []string
	for _, c := range r.ToolCalls {
		out = append(out, c.ID)
	}
	return out
}
