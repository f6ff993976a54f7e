package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// script answers chat turns, summary requests and title requests apart.
type script struct {
	chat      func(openai.ChatCompletionRequest) llmtest.Response
	summary   func(openai.ChatCompletionRequest) llmtest.Response
	title     func(openai.ChatCompletionRequest) llmtest.Response
	summaries atomic.Int64
	titles    atomic.Int64
}

func isSummary(r openai.ChatCompletionRequest) bool {
	return len(r.Messages) > 0 && r.Messages[0].Content == prompts.Summary
}

func isTitle(r openai.ChatCompletionRequest) bool {
	return len(r.Messages) > 0 && r.Messages[0].Content == prompts.Title
}

func (h *harness) script(s *script) *script {
	if s.chat == nil {
		s.chat = llmtest.Echo
	}
	if s.summary == nil {
		s.summary = func(r openai.ChatCompletionRequest) llmtest.Response {
			return llmtest.Response{Content: fmt.Sprintf("The user and assistant talked (summary %d).", len(r.Messages[1].Content))}
		}
	}
	if s.title == nil {
		s.title = func(openai.ChatCompletionRequest) llmtest.Response { return llmtest.Response{Content: "A short chat"} }
	}
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		switch {
		case isSummary(r):
			s.summaries.Add(1)
			return s.summary(r)
		case isTitle(r):
			s.titles.Add(1)
			return s.title(r)
		}
		return s.chat(r)
	})
	return s
}

// requestTokens recounts, independently of what was stored, the tokens of a
// request as the model receives it.
func requestTokens(t *testing.T, r openai.ChatCompletionRequest) int {
	tok := storetest.Tokens(t)
	n := history.ReplyPriming
	for _, m := range r.Messages {
		hm := history.Message{Role: history.Role(m.Role), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			hm.ToolCalls = append(hm.ToolCalls, history.ToolCall{ID: c.ID, Type: string(c.Type), Function: history.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		}
		n += tok.Count(r.Model, &hm)
	}
	return n
}

func (h *harness) newSession(token string, body map[string]any) string {
	h.t.Helper()
	var s sessionResp
	h.do("POST", "/sessions", token, body).want(h.t, 201).decode(h.t, &s)
	return s.ID
}

// allMessages pages through every message of a session.
func (h *harness) allMessages(token, id string) []messageResp {
	h.t.Helper()
	var all []messageResp
	next := ""
	for {
		var p struct {
			Messages      []messageResp `json:"messages"`
			NextPageToken string        `json:"nextPageToken"`
		}
		h.do("GET", "/sessions/"+id+"/messages?limit=100&pageToken="+next, token, nil).want(h.t, 200).decode(h.t, &p)
		all = append(all, p.Messages...)
		if next = p.NextPageToken; next == "" {
			return all
		}
	}
}

func (h *harness) session(id string) *sessions.Session {
	h.t.Helper()
	s, _, err := h.app.History.Store.ReadTail(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) compactions(id string) []history.Compaction {
	h.t.Helper()
	cs, err := h.app.History.Store.ListCompactions(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

// waitFor polls until ok, failing after a few seconds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestLongConversation: 300 turns through /chat with a small budget. The
// session compacts again and again, every raw message is kept, every
// request fits the budget, and each summary extends the previous one.
func TestLongConversation(t *testing.T) {
	h := newHarness(t, func(c *app.Config) { c.TurnsPerMinute = 0 }) // more turns than a minute allows, on a stopped clock
	sc := h.script(&script{chat: func(r openai.ChatCompletionRequest) llmtest.Response {
		last := r.Messages[len(r.Messages)-1].Content
		return llmtest.Response{Content: "Noted: " + last + ". Here is a reply with a few more words to grow the history."}
	}})
	alice := h.signUp()
	const budget, turns = 600, 300
	id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"strategy": "summary_buffer", "budgetTokens": budget}})
	for i := 0; i < turns; i++ {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": fmt.Sprintf("Turn %d: tell me about topic number %d please.", i, i)}).want(t, 200)
		reqs := h.turnRequests()
		if n := requestTokens(t, reqs[len(reqs)-1]); n > budget {
			t.Fatalf("turn %d sent %d tokens, over the budget of %d", i, n, budget)
		}
	}
	msgs := h.allMessages(alice.token, id)
	if len(msgs) != 2*turns {
		t.Fatalf("%d raw messages, want %d", len(msgs), 2*turns)
	}
	for i, m := range msgs {
		if m.Seq != i {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
	// Each turn's compaction runs after its reply: wait until none is in
	// flight, so every summary request made has had its chance to be saved.
	h.idle()
	cs := h.compactions(id)
	if len(cs) == 0 || h.session(id).Bookkeeping.Summary != cs[len(cs)-1].Summary {
		t.Fatalf("%d records; the session's summary is not the last one's", len(cs))
	}
	if len(cs) < 10 {
		t.Fatalf("%d compactions in %d turns", len(cs), turns)
	}
	for i, c := range cs {
		want := 0
		if i > 0 {
			want = cs[i-1].EndSeq + 1
		}
		if c.StartSeq != want || c.EndSeq < c.StartSeq || c.EndSeq-c.StartSeq >= history.MaxCompactMessages {
			t.Errorf("record %d covers %d..%d, want to start at %d", i, c.StartSeq, c.EndSeq, want)
		}
	}
	// Incremental: each summary request after the first carries the summary before it.
	var sums []openai.ChatCompletionRequest
	for _, r := range h.model.Requests() {
		if isSummary(r) {
			sums = append(sums, r)
		}
	}
	if int(sc.summaries.Load()) != len(cs) || !strings.Contains(sums[1].Messages[1].Content, "Summary so far:\n"+cs[0].Summary) {
		t.Errorf("%d summary requests for %d records; second request: %.200s", sc.summaries.Load(), len(cs), sums[1].Messages[1].Content)
	}
	// The next turn's context: system prompt, summary, then messages after it.
	var ctxResp struct {
		Strategy   string
		Budget     int
		Tokens     int
		Compaction *history.Compaction
		Messages   []openai.ChatCompletionMessage
	}
	h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &ctxResp)
	if ctxResp.Strategy != "summary_buffer" || ctxResp.Budget != budget || ctxResp.Tokens > budget || ctxResp.Compaction == nil {
		t.Fatalf("context: %+v", ctxResp)
	}
	if ctxResp.Messages[0].Content != "You are a test assistant." || !strings.HasPrefix(ctxResp.Messages[1].Content, "Summary of the earlier conversation") {
		t.Errorf("context starts %q / %q", ctxResp.Messages[0].Content, ctxResp.Messages[1].Content)
	}
	if got := requestTokens(t, openai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: ctxResp.Messages}); got != ctxResp.Tokens {
		t.Errorf("context says %d tokens, recount %d", ctxResp.Tokens, got)
	}
}

// TestRacingCompactions: compactions of one session at once store one
// record, whether the lease keeps the second out or (lease expired) both
// reach the model.
func TestRacingCompactions(t *testing.T) {
	h := newHarness(t)
	var summaryOK atomic.Bool
	sc := h.script(&script{summary: func(openai.ChatCompletionRequest) llmtest.Response {
		if !summaryOK.Load() {
			return llmtest.Response{Status: 500}
		}
		return llmtest.Response{Content: "A summary.", Delay: 500 * time.Millisecond}
	}})
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "t", "memory": map[string]any{"budgetTokens": 400}})
	for i := 0; i < 12; i++ {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": fmt.Sprintf("message %d with several words to fill the budget", i)}).want(t, 200)
	}
	h.idle()
	if n := len(h.compactions(id)); n != 0 || sc.summaries.Load() == 0 {
		t.Fatalf("%d records while the summarizer fails", n)
	}
	summaryOK.Store(true)
	fixed := storetest.Tokens(t).Count("gpt-4o-mini", &history.Message{Role: history.RoleSystem, Content: "You are a test assistant."})
	var wg sync.WaitGroup
	var ok, busy, done atomic.Int64
	before := sc.summaries.Load()
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.app.History.Compact(context.Background(), id, fixed)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, history.ErrCompactionBusy):
				busy.Add(1)
			case errors.Is(err, history.ErrNothingToCompact): // came after the winner
				done.Add(1)
			default:
				t.Errorf("compact: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || busy.Load()+done.Load() != 4 || len(h.compactions(id)) != 1 || sc.summaries.Load()-before != 1 {
		t.Fatalf("%d stored, %d busy, %d late, %d records, %d model calls", ok.Load(), busy.Load(), done.Load(), len(h.compactions(id)), sc.summaries.Load()-before)
	}

	// Grow the verbatim part again without compacting, then race two
	// compactions past the lease: both call the model, one record lands.
	summaryOK.Store(false)
	for i := 0; i < 12; i++ {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": fmt.Sprintf("more %d with several words to fill the budget", i)}).want(t, 200)
	}
	h.idle()
	summaryOK.Store(true)
	before = sc.summaries.Load()
	errc := make(chan error, 2)
	go func() { _, err := h.app.History.Compact(context.Background(), id, fixed); errc <- err }()
	waitFor(t, "the first summary request", func() bool { return sc.summaries.Load() > before })
	h.clock.Advance(history.CompactionLease + time.Second) // the first holder looks dead
	go func() { _, err := h.app.History.Compact(context.Background(), id, fixed); errc <- err }()
	e1, e2 := <-errc, <-errc
	if (e1 == nil) == (e2 == nil) || errs.CodeOf(errors.Join(e1, e2)) != errs.ECONFLICT {
		t.Errorf("two compactions past the lease: %v / %v", e1, e2)
	}
	if n := len(h.compactions(id)); n != 2 || sc.summaries.Load()-before != 2 {
		t.Errorf("%d records after two rounds, %d model calls in the second", n, sc.summaries.Load()-before)
	}
}

// TestSummarizerFailure: a failing summarizer never fails a turn, changes
// no history, and the context keeps to the budget; once it recovers, the
// next turn compacts.
func TestSummarizerFailure(t *testing.T) {
	h := newHarness(t)
	var fail atomic.Bool
	fail.Store(true)
	sc := h.script(&script{summary: func(openai.ChatCompletionRequest) llmtest.Response {
		if fail.Load() {
			return llmtest.Response{Status: 503}
		}
		return llmtest.Response{Content: "Recovered summary."}
	}})
	alice := h.signUp()
	const budget = 300
	id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"budgetTokens": budget}})
	for i := 0; i < 30; i++ {
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": fmt.Sprintf("message %d, long enough to matter", i)}).want(t, 200)
		reqs := h.turnRequests()
		if n := requestTokens(t, reqs[len(reqs)-1]); n > budget {
			t.Fatalf("turn %d: %d tokens over %d", i, n, budget)
		}
	}
	h.idle()
	if sc.summaries.Load() == 0 || len(h.compactions(id)) != 0 || h.session(id).Bookkeeping.Summary != "" {
		t.Fatalf("%d summary attempts, %d records", sc.summaries.Load(), len(h.compactions(id)))
	}
	if n := len(h.allMessages(alice.token, id)); n != 60 {
		t.Fatalf("%d messages", n)
	}
	fail.Store(false)
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "after recovery"}).want(t, 200)
	waitFor(t, "a compaction after recovery", func() bool { return len(h.compactions(id)) == 1 })
	if s := h.session(id); s.Bookkeeping.Summary != "Recovered summary." || s.Bookkeeping.SummaryUpdatedAt == nil {
		t.Errorf("session summary %q", s.Bookkeeping.Summary)
	}
}

func TestTitles(t *testing.T) {
	h := newHarness(t)
	sc := h.script(&script{title: func(r openai.ChatCompletionRequest) llmtest.Response {
		if strings.Contains(r.Messages[1].Content, "long one") {
			return llmtest.Response{Content: `"A very long proposed title that goes on and on well past sixty characters"`}
		}
		return llmtest.Response{Content: "Trip to Oslo."}
	}})
	alice := h.signUp()
	var c chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"message": "Plan my trip to Oslo"}).want(t, 200).decode(t, &c)
	waitFor(t, "a generated title", func() bool { return h.session(c.SessionID).TitleSource == sessions.TitleGenerated })
	if s := h.session(c.SessionID); s.Title != "Trip to Oslo" {
		t.Errorf("title %q", s.Title)
	}
	calls := sc.titles.Load()
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": c.SessionID, "message": "and hotels?"}).want(t, 200)
	h.idle()
	if sc.titles.Load() != calls {
		t.Errorf("a titled session was titled again")
	}

	h.do("POST", "/chat", alice.token, map[string]any{"message": "the long one"}).want(t, 200).decode(t, &c)
	waitFor(t, "a long title", func() bool { return h.session(c.SessionID).TitleSource == sessions.TitleGenerated })
	if s := h.session(c.SessionID); len([]rune(s.Title)) > 61 || !strings.HasSuffix(s.Title, "…") || strings.Contains(s.Title, `"`) {
		t.Errorf("long title %q", s.Title)
	}

	// A user's title is never overwritten.
	id := h.newSession(alice.token, map[string]any{"title": "Mine"})
	calls = sc.titles.Load()
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "hello"}).want(t, 200)
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "hello again"}).want(t, 200)
	h.idle()
	if h.session(id).Title != "Mine" || sc.titles.Load() != calls {
		t.Errorf("user title became %q", h.session(id).Title)
	}
	// Renamed between the turn and the title: the rename wins.
	if set, err := h.app.Sessions.SetGeneratedTitle(context.Background(), id, "Generated"); err != nil || set {
		t.Errorf("generated title over a user's: %v %v", set, err)
	}
}

// TestStrategiesOverHTTP: each strategy chosen at creation or by PATCH
// selects as specified, at exact budget boundaries, on a hand-made history.
func TestStrategiesOverHTTP(t *testing.T) {
	h := newHarness(t)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "s", "memory": map[string]any{"strategy": "buffer"}})
	var batch []map[string]any
	for i := 0; i < 6; i++ {
		batch = append(batch, map[string]any{"role": []string{"user", "assistant"}[i%2], "content": strings.Repeat(fmt.Sprintf("word%d ", i), 150)})
	}
	batch = append(batch,
		map[string]any{"role": "assistant", "toolCalls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "toolCallId": "c1", "content": strings.Repeat("result ", 150)},
		map[string]any{"role": "user", "content": strings.Repeat("final ", 150)})
	h.do("POST", "/sessions/"+id+"/messages", alice.token, map[string]any{"messages": batch}).want(t, 201)
	msgs := h.allMessages(alice.token, id)
	fixed := storetest.Tokens(t).Count("gpt-4o-mini", &history.Message{Role: history.RoleSystem, Content: "You are a test assistant."}) + history.ReplyPriming
	sum := func(from int) int {
		n := fixed
		for _, m := range msgs[from:] {
			n += m.Tokens
		}
		return n
	}
	type ctxResp struct {
		Strategy string
		Tokens   int
		Messages []openai.ChatCompletionMessage
	}
	get := func() (ctxResp, response) {
		var c ctxResp
		r := h.do("GET", "/sessions/"+id+"/context", alice.token, nil)
		if r.status == 200 {
			r.decode(t, &c)
		}
		return c, r
	}
	patch := func(mem map[string]any) {
		h.do("PATCH", "/sessions/"+id, alice.token, map[string]any{"memory": mem}).want(t, 200)
	}
	check := func(name string, wantFirst int) {
		t.Helper()
		c, r := get()
		if r.status != 200 {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		if got := len(c.Messages) - 1; got != len(msgs)-wantFirst || c.Tokens != sum(wantFirst) {
			t.Errorf("%s: %d messages, %d tokens; want from seq %d (%d tokens)", name, got, c.Tokens, wantFirst, sum(wantFirst))
		}
	}
	check("buffer", 0)
	patch(map[string]any{"strategy": "buffer", "budgetTokens": sum(0)})
	check("buffer at its exact budget", 0)
	patch(map[string]any{"strategy": "buffer", "budgetTokens": sum(0) - 1})
	if _, r := get(); r.status != 409 || r.errorCode() != "failed_precondition" {
		t.Errorf("buffer one token short: %d %s", r.status, r.body)
	}
	patch(map[string]any{"strategy": "token_buffer", "budgetTokens": sum(4)})
	check("token_buffer exact", 4)
	patch(map[string]any{"strategy": "token_buffer", "budgetTokens": sum(4) - 1})
	check("token_buffer one short", 5)
	patch(map[string]any{"strategy": "token_buffer", "budgetTokens": sum(6) - 1})
	check("token_buffer keeps the tool exchange whole", 8) // 6..7 is the call and its result
	patch(map[string]any{"strategy": "window", "windowExchanges": 2})
	check("window of two exchanges, in steps", 0) // 4 exchanges: a window of K sends K to 2K
	patch(map[string]any{"strategy": "window", "windowExchanges": 2, "trim": "each"})
	check("window of two exchanges", 4) // user messages at 0, 2, 4, 8
	patch(map[string]any{"strategy": "window", "windowExchanges": 1, "trim": "each"})
	check("window of one exchange", 8)
	patch(map[string]any{"strategy": "summary_buffer"})
	check("summary_buffer without a summary yet", 0)
	if r := h.do("PATCH", "/sessions/"+id, alice.token, map[string]any{"memory": map[string]any{"strategy": "everything"}}); r.status != 400 {
		t.Errorf("unknown strategy: %d", r.status)
	}
}
