package systemtest_test

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
)

// branchMsg is a message as a listing returns it, with its place in the tree.
type branchMsg struct {
	ID        string `json:"id"`
	Seq       int    `json:"seq"`
	ParentSeq int    `json:"parentSeq"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Tokens    int    `json:"tokens"`
	Siblings  []int  `json:"siblings"`
}

// turn runs a turn as token's user and returns it.
func (h *harness) turn(token string, body map[string]any) chatResp {
	h.t.Helper()
	var r chatResp
	h.do("POST", "/chat", token, body).want(h.t, 200).decode(h.t, &r)
	return r
}

// numbered answers each turn with a reply no other turn gets.
func numbered(h *harness) {
	var n atomic.Int64
	h.script(&script{chat: func(r openai.ChatCompletionRequest) llmtest.Response {
		last := r.Messages[len(r.Messages)-1].Content
		return llmtest.Response{Content: fmt.Sprintf("reply %d to %s", n.Add(1), last)}
	}})
}

// listing returns a session's messages: the active branch, or all.
func (h *harness) listing(token, id, branch string) []branchMsg {
	h.t.Helper()
	var out []branchMsg
	for token2 := ""; ; {
		var page struct {
			Messages      []branchMsg `json:"messages"`
			NextPageToken string      `json:"nextPageToken"`
		}
		h.do("GET", "/sessions/"+id+"/messages?limit=100&branch="+branch+"&pageToken="+token2, token, nil).want(h.t, 200).decode(h.t, &page)
		out = append(out, page.Messages...)
		if token2 = page.NextPageToken; token2 == "" {
			return out
		}
	}
}

func contents(msgs []branchMsg) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// contextContents is what the next turn would send the model, without the
// system prompt: "summary" for a summary, then the messages verbatim.
func (h *harness) contextContents(token, id string) []string {
	h.t.Helper()
	var c struct {
		Messages []openai.ChatCompletionMessage `json:"messages"`
	}
	h.do("GET", "/sessions/"+id+"/context", token, nil).want(h.t, 200).decode(h.t, &c)
	var out []string
	for _, m := range c.Messages[1:] {
		if m.Role == "system" && strings.HasPrefix(m.Content, "Summary of the earlier conversation") {
			out = append(out, "summary")
			continue
		}
		out = append(out, m.Content)
	}
	return out
}

// lastTurnRequest is what the model was sent by the latest turn, without
// the system prompt.
func (h *harness) lastTurnRequest() []string {
	reqs := h.turnRequests()
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages[1:] {
		out = append(out, m.Content)
	}
	return out
}

// checkTree checks the invariants of a session's tree over every message
// it holds: seqs are gapless, every parent was written before its child,
// the active branch is a chain from a first message, and the context is
// exactly the active branch (the budget here holds it all).
func (h *harness) checkTree(token, id string) (all, active []branchMsg) {
	h.t.Helper()
	all = h.listing(token, id, "all")
	for i, m := range all {
		if m.Seq != i || m.ParentSeq >= m.Seq || m.ParentSeq < -1 {
			h.t.Fatalf("message %d: seq %d, parent %d", i, m.Seq, m.ParentSeq)
		}
	}
	active = h.listing(token, id, "active")
	for i, m := range active {
		want := -1
		if i > 0 {
			want = active[i-1].Seq
		}
		if m.ParentSeq != want {
			h.t.Fatalf("active branch breaks at %d: parent %d, want %d", m.Seq, m.ParentSeq, want)
		}
	}
	got, want := h.contextContents(token, id), contents(active)
	for i := range min(len(got), len(want)) {
		if active[i].Role == "tool" && strings.HasPrefix(got[i], "[tool output pruned:") {
			got[i] = want[i] // older tool outputs are shown as stubs
		}
	}
	if !reflect.DeepEqual(got, want) {
		h.t.Fatalf("context %q, want the active branch %q", got, want)
	}
	if s := h.session(id); s.NextSeq != len(all) || s.MessageCount != len(all) {
		h.t.Fatalf("session counts %d messages (next seq %d), %d are stored", s.MessageCount, s.NextSeq, len(all))
	}
	return all, active
}

// TestBranches: a tree of regenerations, edits and switches keeps every
// raw message, lists and sends the model exactly the active branch, and
// gives each version its siblings.
func TestBranches(t *testing.T) { onBothStores(t, testBranches) }

func testBranches(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	numbered(h)
	alice := h.signUp()
	r := h.turn(alice.token, map[string]any{"message": "one"})
	id := r.SessionID
	r = h.turn(alice.token, map[string]any{"sessionId": id, "message": "two"})
	two, firstReply := r.UserMessage, r.Reply

	// Regenerate the reply: a new reply beside the old one.
	var regen chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": firstReply.ID, "clientMessageId": "regen-1"}).want(t, 200).decode(t, &regen)
	if regen.UserMessage.ID != two.ID || regen.Reply.ID == firstReply.ID || regen.Reply.Content == firstReply.Content {
		t.Fatalf("regenerated %+v", regen)
	}
	if got, want := h.lastTurnRequest(), []string{"one", "reply 1 to one", "two"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the regeneration sent %q, want %q", got, want)
	}
	_, active := h.checkTree(alice.token, id)
	if got, want := contents(active), []string{"one", "reply 1 to one", "two", regen.Reply.Content}; !reflect.DeepEqual(got, want) {
		t.Fatalf("active branch %q, want %q", got, want)
	}
	if got, want := active[3].Siblings, []int{firstReply.Seq, regen.Reply.Seq}; !reflect.DeepEqual(got, want) {
		t.Fatalf("siblings of the regenerated reply %v, want %v", got, want)
	}
	// A retry under the same key is the same regeneration.
	var again chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": firstReply.ID, "clientMessageId": "regen-1"}).want(t, 200).decode(t, &again)
	if !again.Replayed || again.Reply.ID != regen.Reply.ID {
		t.Fatalf("retried regeneration %+v", again)
	}
	// Regenerating by the user message works too.
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": two.ID}).want(t, 200)

	// Edit "two": a new user message beside it, answered, on a new branch.
	var edit chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "edit": two.ID, "message": "TWO", "clientMessageId": "edit-1"}).want(t, 200).decode(t, &edit)
	if got, want := h.lastTurnRequest(), []string{"one", "reply 1 to one", "TWO"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the edit sent %q, want %q", got, want)
	}
	_, active = h.checkTree(alice.token, id)
	if got, want := contents(active), []string{"one", "reply 1 to one", "TWO", edit.Reply.Content}; !reflect.DeepEqual(got, want) {
		t.Fatalf("active branch after the edit %q, want %q", got, want)
	}
	if got, want := active[2].Siblings, []int{two.Seq, edit.UserMessage.Seq}; !reflect.DeepEqual(got, want) {
		t.Fatalf("siblings of the edit %v, want %v", got, want)
	}
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "edit": two.ID, "message": "TWO", "clientMessageId": "edit-1"}).want(t, 200).decode(t, &again)
	if !again.Replayed || again.Reply.ID != edit.Reply.ID {
		t.Fatalf("retried edit %+v", again)
	}
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "edit": two.ID, "message": "other", "clientMessageId": "edit-1"}).want(t, 409)

	// Switch back to the original "two": its latest reply is shown.
	h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": two.Seq}).want(t, 200)
	_, active = h.checkTree(alice.token, id)
	latest := active[3]
	if active[2].ID != two.ID || latest.Siblings == nil || latest.Seq != latest.Siblings[len(latest.Siblings)-1] {
		t.Fatalf("after switching back: %+v", active)
	}
	// The conversation continues from the branch shown.
	r = h.turn(alice.token, map[string]any{"sessionId": id, "message": "three"})
	if r.UserMessage.ID == "" || h.lastTurnRequest()[3] != latest.Content {
		t.Fatalf("the turn after the switch sent %q", h.lastTurnRequest())
	}
	// And to the very first reply, which has no continuation.
	h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": firstReply.Seq}).want(t, 200)
	all, active := h.checkTree(alice.token, id)
	if got, want := contents(active), []string{"one", "reply 1 to one", "two", firstReply.Content}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the first branch %q, want %q", got, want)
	}
	// Nothing was lost: 2 turns, 2 regenerations, an edit, a turn.
	if len(all) != 4+1+1+2+2 {
		t.Fatalf("%d messages stored, want 10", len(all))
	}

	// Export holds every branch, each message with its parent.
	var export struct {
		Sessions []struct {
			Session  struct{ Branches struct{ Leaf int } }
			Messages []branchMsg
		}
	}
	h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &export)
	if got := export.Sessions[0].Messages; len(got) != len(all) || got[len(got)-1].ParentSeq != all[len(all)-1].ParentSeq ||
		export.Sessions[0].Session.Branches.Leaf != firstReply.Seq {
		t.Fatalf("export: %d messages, leaf %d", len(got), export.Sessions[0].Session.Branches.Leaf)
	}

	// Bad requests change nothing.
	bob := h.signUp()
	for _, tc := range []struct {
		name   string
		token  string
		path   string
		body   map[string]any
		status int
	}{
		{"RegenerateUnknown", alice.token, "/chat", map[string]any{"sessionId": id, "regenerate": "nope"}, 404},
		{"RegenerateWithMessage", alice.token, "/chat", map[string]any{"sessionId": id, "regenerate": two.ID, "message": "x"}, 400},
		{"RegenerateWithoutSession", alice.token, "/chat", map[string]any{"regenerate": two.ID}, 400},
		{"RegenerateAndEdit", alice.token, "/chat", map[string]any{"sessionId": id, "regenerate": two.ID, "edit": two.ID, "message": "x"}, 400},
		{"EditAReply", alice.token, "/chat", map[string]any{"sessionId": id, "edit": firstReply.ID, "message": "x"}, 400},
		{"EditEmpty", alice.token, "/chat", map[string]any{"sessionId": id, "edit": two.ID}, 400},
		{"EditOthers", bob.token, "/chat", map[string]any{"sessionId": id, "edit": two.ID, "message": "x"}, 404},
		{"SwitchOthers", bob.token, "/sessions/" + id + "/branch", map[string]any{"seq": 0}, 404},
		{"SwitchPastEnd", alice.token, "/sessions/" + id + "/branch", map[string]any{"seq": 99}, 400},
		{"SwitchNoSeq", alice.token, "/sessions/" + id + "/branch", map[string]any{}, 400},
		{"SwitchUnknownField", alice.token, "/sessions/" + id + "/branch", map[string]any{"seq": 0, "leaf": 1}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.do("POST", tc.path, tc.token, tc.body).want(t, tc.status)
		})
	}
	h.do("GET", "/sessions/"+id+"/messages?branch=other", alice.token, nil).want(t, 400)
	if got, _ := h.checkTree(alice.token, id); len(got) != len(all) {
		t.Fatalf("bad requests stored messages: %d, want %d", len(got), len(all))
	}
	if got := h.listing(bob.token, h.newSession(bob.token, nil), "all"); len(got) != 0 {
		t.Fatalf("another user sees %d messages", len(got))
	}
}

// TestBranchesKeepTheirSummaries: a compaction made on one branch is never
// in another branch's context; switching back brings it back.
func TestBranchesKeepTheirSummaries(t *testing.T) { onBothStores(t, testBranchSummaries) }

func testBranchSummaries(t *testing.T, backend string) {
	h := newHarnessOn(t, backend, func(c *app.Config) { c.TurnsPerMinute = 0 })
	numbered(h)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"strategy": "summary_buffer", "budgetTokens": 400}})
	var first, r chatResp
	for i := 0; len(h.compactions(id)) == 0; i++ {
		if i == 40 {
			t.Fatal("no compaction after 40 turns")
		}
		r = h.turn(alice.token, map[string]any{"sessionId": id, "message": fmt.Sprintf("Turn %d: tell me about topic number %d please.", i, i)})
		if i == 0 {
			first = r
		}
		h.idle()
	}
	end := r.Reply.Seq
	if got := h.contextContents(alice.token, id); got[0] != "summary" {
		t.Fatalf("the compacted branch's context starts %q", got[0])
	}
	// Edit the first message: the new branch forks before the summary's end.
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "edit": first.UserMessage.ID, "message": "A fresh start"}).want(t, 200)
	if got, want := h.contextContents(alice.token, id), []string{"A fresh start", h.listing(alice.token, id, "active")[1].Content}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the new branch's context %q, want %q", got, want)
	}
	for _, m := range h.lastTurnRequest() {
		if strings.Contains(m, "Summary") {
			t.Fatalf("the edit's request carried a summary: %q", m)
		}
	}
	h.checkTree(alice.token, id)
	if s := h.session(id); s.Bookkeeping.Summary != "" {
		t.Fatalf("the new branch's session shows the other branch's summary %q", s.Bookkeeping.Summary)
	}
	// Back on the first branch, its summary is in use again.
	h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": end}).want(t, 200)
	got := h.contextContents(alice.token, id)
	if got[0] != "summary" || got[len(got)-1] != r.Reply.Content {
		t.Fatalf("back on the compacted branch the context is %q", got)
	}
	if cs := h.compactions(id); h.session(id).Bookkeeping.Summary != cs[len(cs)-1].Summary {
		t.Fatalf("back on the compacted branch the session's summary is not its own")
	}
}

// TestConcurrentBranching: turns, regenerations, edits and switches on one
// session at once keep the tree whole.
func TestConcurrentBranching(t *testing.T) { onBothStores(t, testConcurrentBranching) }

func testConcurrentBranching(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	numbered(h)
	alice := h.signUp()
	r := h.turn(alice.token, map[string]any{"message": "one"})
	id, one, reply := r.SessionID, r.UserMessage, r.Reply
	var wg sync.WaitGroup
	var written atomic.Int64 // messages the successful requests wrote
	written.Add(2)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body map[string]any
			path := "/chat"
			switch i % 4 {
			case 0:
				body = map[string]any{"sessionId": id, "message": fmt.Sprintf("turn %d", i)}
			case 1:
				body = map[string]any{"sessionId": id, "regenerate": reply.ID}
			case 2:
				body = map[string]any{"sessionId": id, "edit": one.ID, "message": fmt.Sprintf("edit %d", i)}
			case 3:
				path, body = "/sessions/"+id+"/branch", map[string]any{"seq": one.Seq}
			}
			// A regeneration or an edit while a reply of the session is
			// written is refused with a Retry-After, and retried as told; a
			// switch may meet a moving branch.
			res, _ := h.retrying("POST", path, alice.token, body, 30)
			switch {
			case res.status == 200 && i%4 == 1:
				written.Add(1)
			case res.status == 200 && i%4 != 3:
				written.Add(2)
			case res.status != 200 && res.status != 409:
				t.Errorf("%s %v: %d %s", path, body, res.status, res.body)
			}
		}()
	}
	wg.Wait()
	h.idle()
	all, _ := h.checkTree(alice.token, id)
	if int64(len(all)) != written.Load() || len(all) < 2+2*3 {
		t.Fatalf("%d messages stored; the successful requests wrote %d", len(all), written.Load())
	}
	if b := h.session(id).Branches; b == nil || len(b.Forks) < 2 {
		t.Fatalf("the session did not branch: %+v", b)
	}
}

// TestRegenerationLeases: a keyed turn's message can be regenerated as soon
// as its reply is stored (and not while it is still being answered); of
// concurrent regenerations of one message exactly one calls the model, the
// others are told 409 with a Retry-After; once it is done, the message can
// be regenerated again, and a retry under the first key gets its reply.
func TestRegenerationLeases(t *testing.T) { onBothStores(t, testRegenerationLeases) }

func testRegenerationLeases(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	g := newGate(h)
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"title": "leases"})
	first := make(chan response, 1)
	go func() {
		first <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "q", "clientMessageId": "turn-1"}, nil)
	}()
	<-g.called
	asked := h.listing(alice.token, id, "active")[0]
	if r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": asked.ID}); r.status != 409 || r.header.Get("Retry-After") == "" {
		t.Fatalf("a regeneration while the message is answered: %d %s", r.status, r.body)
	}
	close(g.open)
	(<-first).want(t, 200)

	// Right after the reply: regenerations may run. Hold the next one at
	// the model and send duplicates and another regeneration meanwhile.
	g2 := newGate(h)
	regen := make(chan response, 1)
	go func() {
		regen <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": asked.ID, "clientMessageId": "regen-a"}, nil)
	}()
	<-g2.called
	for _, key := range []string{"regen-a", "regen-b"} {
		r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": asked.ID, "clientMessageId": key})
		if r.status != 409 || r.header.Get("Retry-After") == "" {
			t.Errorf("regeneration %s while another runs: %d %s", key, r.status, r.body)
		}
	}
	close(g2.open)
	var done chatResp
	(<-regen).want(t, 200).decode(t, &done)
	if n := g2.calls.Load(); n != 1 {
		t.Errorf("%d model calls for one regeneration", n)
	}
	var again chatResp
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": asked.ID, "clientMessageId": "regen-a"}).want(t, 200).decode(t, &again)
	if !again.Replayed || again.Reply.ID != done.Reply.ID {
		t.Errorf("a retry of the regeneration: %+v", again)
	}
	// Done: the message can be answered anew again, at once.
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": asked.ID, "clientMessageId": "regen-b"}).want(t, 200)
	if all, _ := h.checkTree(alice.token, id); len(all) != 4 {
		t.Errorf("%d messages: want the question and three replies", len(all))
	}
}

// TestSwitchWhileAnswering: a reply whose question is no longer on the
// branch shown (the user switched meanwhile) is stored under its question,
// and the branch shown stays shown.
func TestSwitchWhileAnswering(t *testing.T) { onBothStores(t, testSwitchWhileAnswering) }

func testSwitchWhileAnswering(t *testing.T, backend string) {
	h := newHarnessOn(t, backend)
	numbered(h)
	alice := h.signUp()
	r := h.turn(alice.token, map[string]any{"message": "one"})
	id, first := r.SessionID, r.Reply
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "regenerate": first.ID}).want(t, 200)
	g := newGate(h)
	pending := make(chan response, 1)
	go func() {
		pending <- doRequest(t, h.srv.URL, "POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "two"}, nil)
	}()
	<-g.called
	h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": first.Seq}).want(t, 200)
	close(g.open)
	(<-pending).want(t, 200).decode(t, &r)
	if r.Reply.ParentSeq != r.UserMessage.Seq {
		t.Errorf("the reply's parent is %d, want its question %d", r.Reply.ParentSeq, r.UserMessage.Seq)
	}
	_, active := h.checkTree(alice.token, id)
	if got, want := contents(active), []string{"one", first.Content}; !reflect.DeepEqual(got, want) {
		t.Errorf("the branch shown became %q, want %q", got, want)
	}
	// Switching to the question shows it with its reply.
	h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": r.UserMessage.Seq}).want(t, 200)
	if _, active = h.checkTree(alice.token, id); active[len(active)-1].ID != r.Reply.ID {
		t.Errorf("the question's branch ends at %q", active[len(active)-1].Content)
	}
}
