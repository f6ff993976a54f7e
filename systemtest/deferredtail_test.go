package systemtest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/llm/llmtest"
)

// TestTailDocWrittenOnceATurn: a turn writes its session's tail document
// once, in its reply's commit; until then the session document carries
// the user's message, and every reader of the context sees it: while the
// model answers, after a turn that never got its reply (the model failed;
// a turn whose instance died leaves the same documents, with its lease),
// on its own branch only, and in the next turn's request to the model,
// whose commit moves it into the tail document.
func TestTailDocWrittenOnceATurn(t *testing.T) {
	h := newHarnessOn(t, "firestore")
	alice := h.signUp()
	id := h.newSession(alice.token, nil)
	ctx := context.Background()
	session := h.firestore.Collection(firestoredb.SessionsCollection).Doc(id)
	tailDoc := session.Collection(firestoredb.ContextCollection).Doc("window")
	// inTailDoc is the content of the tail document's messages; carried, that of
	// the session's tailNext.
	look := func() (inTailDoc []string, carried bool) {
		t.Helper()
		w, err := tailDoc.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range w.Data()["messages"].(map[string]any) {
			inTailDoc = append(inTailDoc, string(e.([]byte)))
		}
		s, err := session.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, carried = s.Data()["tailNext"]
		return inTailDoc, carried
	}
	holds := func(entries []string, text string) bool {
		for _, e := range entries {
			if strings.Contains(e, text) {
				return true
			}
		}
		return false
	}
	contextHas := func(text string) bool {
		t.Helper()
		var c struct {
			Messages []openai.ChatCompletionMessage
		}
		h.do("GET", "/sessions/"+id+"/context", alice.token, nil).want(t, 200).decode(t, &c)
		for _, m := range c.Messages {
			if m.Content == text {
				return true
			}
		}
		return false
	}
	var during atomic.Value // func() *llmtest.Response, run while the model answers; nil: echo
	during.Store(func() *llmtest.Response { return nil })
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		if resp := during.Load().(func() *llmtest.Response)(); resp != nil {
			return *resp
		}
		return llmtest.Echo(r)
	})
	turn := func(msg string, want int) {
		t.Helper()
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": msg, "clientMessageId": msg}).want(t, want)
		h.idle()
	}
	turn("one", 200)

	// While the model answers "two", the tail document does not hold it; the
	// session carries it, and the context has it.
	var checked atomic.Bool
	during.Store(func() *llmtest.Response {
		w, carried := look()
		if holds(w, "two") || !carried || !contextHas("two") {
			t.Errorf("while answering: the window holds it %v, the session carries it %v", holds(w, "two"), carried)
		}
		checked.Store(true)
		return nil
	})
	turn("two", 200)
	if w, carried := look(); !checked.Load() || !holds(w, "two") || !holds(w, "echo: two") || carried {
		t.Errorf("after the reply: the window holds %q; the session still carries a message: %v", w, carried)
	}

	// The model fails on "three": the turn gives its lease back, and its
	// message stays where the claim put it (as when the instance running
	// a turn dies, its lease running out instead).
	during.Store(func() *llmtest.Response { return &llmtest.Response{Status: 400, ErrorMessage: "refused"} })
	r := h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": "three", "clientMessageId": "three"})
	during.Store(func() *llmtest.Response { return nil })
	h.idle()
	if r.status < 400 {
		t.Fatalf("the turn the model refused: %d %s", r.status, r.body)
	}
	if w, carried := look(); holds(w, "three") || !carried || !contextHas("three") {
		t.Fatalf("after the failed turn: the window holds it %v, the session carries it %v, or the context lacks it", holds(w, "three"), carried)
	}
	// An edit of "two" starts another branch, whose context does not hold
	// the carried message; back on its own branch, the context does.
	all := h.messages(alice.token, id)
	h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "edit": all[2].ID, "message": "two again", "clientMessageId": "edit"}).want(t, 200)
	if !contextHas("two again") || contextHas("three") {
		t.Errorf("the edited branch's context holds the other branch's carried message, or lacks its own")
	}
	h.do("POST", "/sessions/"+id+"/branch", alice.token, map[string]any{"seq": all[4].Seq}).want(t, 200)
	if !contextHas("two") || !contextHas("three") {
		t.Errorf("back on its branch, the context lacks the carried message")
	}

	turn("four", 200)
	reqs := h.turnRequests()
	var sent []string
	for _, m := range reqs[len(reqs)-1].Messages[1:] {
		sent = append(sent, m.Content)
	}
	if got := strings.Join(sent, "|"); !strings.HasSuffix(got, "two|echo: two|three|four") {
		t.Errorf("the next turn sent %q", got)
	}
	w, carried := look()
	for _, want := range []string{"one", "two", "three", "four", "echo: four"} {
		if !holds(w, want) {
			t.Errorf("the window lacks %q", want)
		}
	}
	if carried {
		t.Errorf("the session still carries a message")
	}
	if n := len(h.messages(alice.token, id)); n != 7 {
		t.Errorf("%d messages on the branch, want 7", n)
	}
}
