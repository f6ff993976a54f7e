package systemtest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"google.golang.org/grpc/codes"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/llm/llmtest"
)

// checkParents fails unless the session's tree is sound: every reply's
// parent is a user message (the question it answers), every user
// message's parent is an assistant message or none; and no answering
// lease is left behind.
func (h *harness) checkParents(token, id string) []branchMsg {
	h.t.Helper()
	all, _ := h.checkTree(token, id)
	for _, m := range all {
		parent := ""
		if m.ParentSeq >= 0 {
			parent = all[m.ParentSeq].Role
		}
		switch {
		case m.Role == "assistant" && parent != "user" && parent != "tool":
			h.t.Errorf("reply %d (%q) has a %q parent (seq %d), want its question or a tool's result", m.Seq, m.Content, parent, m.ParentSeq)
		case m.Role == "tool" && parent != "assistant" && parent != "tool":
			h.t.Errorf("tool result %d (%q) follows a %q message (seq %d)", m.Seq, m.Content, parent, m.ParentSeq)
		case m.Role == "user" && parent != "" && parent != "assistant":
			h.t.Errorf("user message %d (%q) follows a %q message (seq %d)", m.Seq, m.Content, parent, m.ParentSeq)
		}
	}
	if s := h.session(id); s.Bookkeeping.Answering != nil {
		h.t.Errorf("an answering lease is left behind: %+v", s.Bookkeeping.Answering)
	}
	return all
}

// TestLostCommitAnswers: a commit that lands but whose answer is lost (the
// client cannot know whether it landed) is found out, not guessed: the
// turn carries on and answers 200, stored once, with no lease left for a
// retry to wait on; an append likewise stores its batch once.
func TestLostCommitAnswers(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", code, stream), func(t *testing.T) {
				h := newHarness(t)
				faults := &firestoretest.Faults{}
				h.counter.Faults = faults
				alice := h.signUp()
				id := h.newSession(alice.token, map[string]any{"title": "lost answers"})
				for i, key := range []string{"keyed", ""} {
					// The claim's and the reply's commits both lose their answers.
					h.idle()
					faults.LoseCommits(2, code)
					body := map[string]any{"sessionId": id, "message": fmt.Sprint("question ", i), "stream": stream}
					if key != "" {
						body["clientMessageId"] = key
					}
					r := h.do("POST", "/chat", alice.token, body)
					if r.status != 200 || strings.Contains(string(r.body), "event: error") {
						t.Fatalf("turn %d: %d %s", i, r.status, r.body)
					}
					if n := faults.Injected().Ambiguous; n != int64(2*(i+1)) {
						t.Fatalf("%d commits lost their answers, want %d", n, 2*(i+1))
					}
				}
				h.idle()
				faults.LoseCommits(1, code)
				var appended struct {
					Messages []messageResp `json:"messages"`
				}
				h.do("POST", "/sessions/"+id+"/messages", alice.token, map[string]any{"messages": []map[string]any{
					{"role": "user", "content": "appended question"}, {"role": "assistant", "content": "appended answer"}}}).want(t, 201).decode(t, &appended)
				all := h.checkParents(alice.token, id)
				if got, want := contents(all), []string{"question 0", "echo: question 0", "question 1", "echo: question 1", "appended question", "appended answer"}; strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("stored %q, want %q", got, want)
				}
				if len(appended.Messages) != 2 || appended.Messages[0].ID != all[4].ID {
					t.Errorf("the append answered %+v", appended.Messages)
				}
				// Nothing waits on a lease: the next turn runs at once.
				h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "next", "clientMessageId": "next"}).want(t, 200)
			})
		}
	}
}

// TestNoEditWhileAnswering: while a question's reply is being written,
// regenerating or editing is 409 with a Retry-After (keyed or not) and
// calls no model; the reply is stored under its question.
func TestNoEditWhileAnswering(t *testing.T) { onBothStores(t, testNoEditWhileAnswering) }

func testNoEditWhileAnswering(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	alice := h.signUp()
	first := h.turn(alice.token, map[string]any{"message": "earlier"})
	id := first.SessionID
	g := newGate(h)
	pending := make(chan response, 1)
	go func() {
		pending <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "being answered", "stream": true}, nil)
	}()
	<-g.called
	asked := h.listing(alice.token, id, "all")[2]
	for i, body := range []map[string]any{
		{"sessionId": id, "regenerate": asked.ID},
		{"sessionId": id, "regenerate": asked.ID, "clientMessageId": "regen"},
		{"sessionId": id, "regenerate": first.Reply.ID},
		{"sessionId": id, "edit": asked.ID, "message": "edited"},
		{"sessionId": id, "edit": first.UserMessage.ID, "message": "edited earlier", "clientMessageId": "edit"},
	} {
		r := h.do("POST", "/chat", alice.token, body)
		if retry, _ := strconv.Atoi(r.header.Get("Retry-After")); r.status != 409 || retry < 1 {
			t.Errorf("request %d while a reply is written: %d Retry-After %q %s", i, r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	close(g.open)
	(<-pending).want(t, 200)
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	all := h.checkParents(alice.token, id)
	if len(all) != 4 {
		t.Errorf("%d messages stored, want 4", len(all))
	}
	// Done: the question can be regenerated now.
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": asked.ID}).want(t, 200)
	h.checkParents(alice.token, id)
}

// TestOneKeyOneOperation: a clientMessageId names one operation on one
// session. Reused with another kind (turn, regenerate, edit), another
// target or another message it is 409 without Retry-After, on every
// path; reused with the same request it replays.
func TestOneKeyOneOperation(t *testing.T) { onBothStores(t, testOneKeyOneOperation) }

func testOneKeyOneOperation(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	alice := h.signUp()
	a := h.turn(alice.token, map[string]any{"message": "first"})
	id := a.SessionID
	b := h.turn(alice.token, map[string]any{"sessionId": id, "message": "second"})
	ops := map[string]func(key string) map[string]any{
		"turn": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "message": "a turn", "clientMessageId": k}
		},
		"turn other": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "message": "another turn", "clientMessageId": k}
		},
		"regenerate a": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "regenerate": a.UserMessage.ID, "clientMessageId": k}
		},
		"regenerate b": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "regenerate": b.UserMessage.ID, "clientMessageId": k}
		},
		"edit a": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "edit": a.UserMessage.ID, "message": "edited", "clientMessageId": k}
		},
		"edit b": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "edit": b.UserMessage.ID, "message": "edited", "clientMessageId": k}
		},
		"edit a, other": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "edit": a.UserMessage.ID, "message": "edited otherwise", "clientMessageId": k}
		},
		"regenerate a, by its reply": func(k string) map[string]any {
			return map[string]any{"sessionId": id, "regenerate": a.Reply.ID, "clientMessageId": k}
		},
	}
	names := []string{"turn", "turn other", "regenerate a", "regenerate b", "edit a", "edit b", "edit a, other", "regenerate a, by its reply"}
	n := 0
	for _, first := range names {
		for _, second := range names {
			if first == second {
				continue
			}
			n++
			key := fmt.Sprintf("key-%d", n)
			var done chatResp
			h.do("POST", "/chat", alice.token, ops[first](key)).want(t, 200).decode(t, &done)
			for _, stream := range []bool{false, true} {
				body := ops[second](key)
				body["stream"] = stream
				r := h.do("POST", "/chat", alice.token, body)
				if r.status != 409 || r.header.Get("Retry-After") != "" || r.errorCode() != "conflict" {
					t.Errorf("%s, then %s under its key (stream %v): %d Retry-After %q %s", first, second, stream, r.status, r.header.Get("Retry-After"), r.body)
				}
			}
			var again chatResp
			h.do("POST", "/chat", alice.token, ops[first](key)).want(t, 200).decode(t, &again)
			if !again.Replayed || again.Reply.ID != done.Reply.ID {
				t.Errorf("%s again under its key: replayed %v, reply %s want %s", first, again.Replayed, again.Reply.ID, done.Reply.ID)
			}
		}
	}
	h.checkParents(alice.token, id)
}

// TestModelFaultsAreRetryable: a model that fails in any way (an error
// status, a cut stream, a stream that ends early, a stall past the
// deadline) is a 502 with a Retry-After, or a retryable SSE error event;
// nothing of it is stored as a reply, and a retry with the same key
// answers.
func TestModelFaultsAreRetryable(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.ModelTimeout = 2 * time.Second })
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "faults"})
	faults := map[string]llmtest.Response{
		"500":       {Status: 500},
		"429":       {Status: 429},
		"cut":       {Content: "a reply that is cut half way through", Cut: true},
		"early end": {Content: "a reply that ends half way through", EndEarly: true},
		"stall":     {Content: "too late", Delay: 4 * time.Second},
	}
	for name, fault := range faults {
		for _, stream := range []bool{false, true} {
			var once sync.Once
			h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
				failed := false
				once.Do(func() { failed = true })
				if failed {
					return fault
				}
				return llmtest.Echo(r)
			})
			key := fmt.Sprintf("%s-%v", strings.ReplaceAll(name, " ", "-"), stream)
			body := map[string]any{"sessionId": id, "message": key, "clientMessageId": key, "stream": stream}
			r := h.do("POST", "/chat", alice.token, body)
			code, retry := r.status, r.header.Get("Retry-After")
			if stream && r.status == 200 {
				evs := readEvents(t, strings.NewReader(string(r.body)), nil)
				last := evs[len(evs)-1]
				var e errorResp
				json.Unmarshal(last.data, &e)
				if last.name != "error" || e.Error.Code != "upstream" || e.Error.RetryAfter < 1 {
					t.Errorf("%s, streamed: last event %s %s", name, last.name, last.data)
				}
				code, retry = http.StatusBadGateway, strconv.Itoa(e.Error.RetryAfter)
			}
			if code != http.StatusBadGateway || retry == "" || retry == "0" {
				t.Errorf("%s (stream %v): %d Retry-After %q %s", name, stream, r.status, retry, r.body)
			}
			var done chatResp
			h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": key, "clientMessageId": key}).want(t, 200).decode(t, &done)
			if done.Reply.Content != "echo: "+key {
				t.Errorf("%s: the retry answered %q", name, done.Reply.Content)
			}
		}
	}
	all := h.checkParents(alice.token, id)
	if len(all) != 4*len(faults) {
		t.Errorf("%d messages stored, want %d", len(all), 4*len(faults))
	}
}

// TestPagingRange: page sizes out of the documented range are 400.
func TestPagingRange(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "paging"})
	for _, path := range []string{"/sessions/" + id + "/messages", "/sessions"} {
		for _, limit := range []string{"0", "-1", "101", "x"} {
			if r := h.do("GET", path+"?limit="+limit, alice.token, nil); r.status != 400 || r.errorCode() != "invalid_argument" {
				t.Errorf("%s?limit=%s: %d %s", path, limit, r.status, r.body)
			}
		}
		h.do("GET", path+"?limit=1", alice.token, nil).want(t, 200)
		h.do("GET", path+"?limit=100", alice.token, nil).want(t, 200)
	}
}

// retrying sends a request as a well-behaved client does: again after a
// 5xx or a 409 with a Retry-After (waiting as told), at most tries times.
// It returns the last answer and how many were sent.
func (h *harness) retrying(method, path, token string, body any, tries int) (response, int) {
	var r response
	for i := 1; ; i++ {
		h.sent.Add(1)
		r = doRequest(h.t, h.srv.URL, method, path, token, body, nil)
		retry, _ := strconv.Atoi(r.header.Get("Retry-After"))
		again := r.status >= 500 || r.status == 409 && retry > 0
		if !again || i == tries {
			return r, i
		}
		time.Sleep(time.Duration(max(retry, 1)) * time.Second / 4 * time.Duration(1+rand.IntN(4)))
	}
}
