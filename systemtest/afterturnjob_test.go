package systemtest_test

import (
	"context"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	cloudevent "github.com/cloudevents/sdk-go/v2/event"
	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// TestAfterTurnJobOutlivesItsInstance: the instance that answered a turn
// stops right after the reply, before the work that follows it runs (its
// its Runner drops the job). A new instance over the same store runs the job
// the reply's commit recorded: the trigger on its creation once the
// dead turn's lease ran out (and not before), or the sweep. The title,
// the exchange's index entry for search and the summary arrive, once.
func TestAfterTurnJobOutlivesItsInstance(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		for _, runner := range []string{"trigger", "sweep"} {
			t.Run(runner, func(t *testing.T) { testAfterTurnJob(t, backend, runner) })
		}
	})
}

func testAfterTurnJob(t *testing.T, backend, runner string) {
	h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
	var summarize atomic.Bool
	var titles, summaries atomic.Int64
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		switch r.Messages[0].Content {
		case prompts.Title:
			titles.Add(1)
			return llmtest.Response{Content: "Invoices in PDF"}
		case prompts.Summary:
			if !summarize.Load() {
				return llmtest.Response{Status: 503} // the appends' own summaries fail: one stays due
			}
			summaries.Add(1)
			return llmtest.Response{Content: "They planned things."}
		}
		return llmtest.Echo(r)
	})
	alice := h.signUp()
	id := h.newSession(alice.token, map[string]any{"memory": map[string]any{"budgetTokens": 1500}})
	h.appendExchanges(alice.token, id, 0, 20)
	h.idle()
	summarize.Store(true)
	if n := len(h.compactions(id)); n != 0 {
		t.Fatalf("%d summaries before the turn", n)
	}

	h.app.Chat.Runner = stoppedInstance{} // the instance stops after the reply
	turn := h.turn(alice.token, map[string]any{"sessionId": id, "message": "Which PDF library should I use for parsing invoices?"})
	h.restart()
	s := h.session(id)
	if s.TitleSource != sessions.TitleDefault || titles.Load() != 0 || summaries.Load() != 0 || len(h.compactions(id)) != 0 {
		t.Fatalf("the work after the reply ran on the stopped instance: title %q (%s), %d summaries", s.Title, s.TitleSource, summaries.Load())
	}
	if r := h.search(alice.token, "PDF library"); len(r.Results) != 0 {
		t.Fatalf("indexed before the job ran: %+v", r.Results)
	}

	ctx := context.Background()
	switch runner {
	case "trigger":
		e := cloudevent.New()
		e.SetType("google.cloud.firestore.document.v1.created")
		e.SetSubject("documents/chat_sessions/" + id + "/jobs/" + turn.Reply.ID)
		if err := h.app.RunJobEvent(ctx, e); errs.CodeOf(err) != errs.ECONFLICT {
			t.Fatalf("the trigger while the turn's lease runs: %v, want a conflict (retried)", err)
		}
		h.clock.Advance(chat.JobLease)
		if err := h.app.RunJobEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := h.app.RunJobEvent(ctx, e); err != nil { // delivered twice: done already
			t.Fatal(err)
		}
	case "sweep":
		if r := h.app.RunDueJobs(ctx); r.Found != 0 {
			t.Fatalf("the sweep ran a fresh job: %+v", r)
		}
		h.clock.Advance(chat.JobDelay + time.Second)
		if r := h.app.RunDueJobs(ctx); r.Found != 1 || r.Ran != 1 {
			t.Fatalf("the sweep's backstop: %+v", r)
		}
		if r := h.app.RunDueJobs(ctx); r.Found != 0 {
			t.Fatalf("the job is still there after it ran: %+v", r)
		}
	}
	if s := h.session(id); s.Title != "Invoices in PDF" || s.TitleSource != sessions.TitleGenerated || titles.Load() != 1 {
		t.Errorf("title %q (%s), %d titles asked", s.Title, s.TitleSource, titles.Load())
	}
	if cs := h.compactions(id); len(cs) != 1 || cs[0].Summary != "They planned things." || summaries.Load() != 1 {
		t.Errorf("summaries %+v, %d asked", cs, summaries.Load())
	}
	r := h.search(alice.token, "PDF library")
	if len(r.Results) == 0 || r.Results[0].MessageID != turn.UserMessage.ID {
		t.Errorf("the exchange is not found: %+v", r.Results)
	}
}

// search is GET /search for q.
func (h *harness) search(token, q string) searchResp {
	h.t.Helper()
	var r searchResp
	h.do("GET", "/search?"+url.Values{"q": {q}}.Encode(), token, nil).want(h.t, 200).decode(h.t, &r)
	return r
}

// stoppedInstance is the Runner of an instance that stops right after a reply:
// the job it is given never runs there.
type stoppedInstance struct{}

func (stoppedInstance) Run(context.Context, chat.Work) {}

// TestTurnEndsAtItsReply: a turn's streamed response ends once its reply
// is stored (a client reading to the stream's end, as the AI SDK's does,
// is done), while the work that follows it (here a title the model is
// slow to give) still runs on the instance; the title arrives after.
func TestTurnEndsAtItsReply(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		held := make(chan struct{})
		h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
			if r.Messages[0].Content == prompts.Title {
				<-held
				return llmtest.Response{Content: "Slow title"}
			}
			return llmtest.Echo(r)
		})
		release := time.AfterFunc(10*time.Second, func() { close(held) }) // the old turn waited for it
		alice := h.signUp()
		start := time.Now()
		body := h.do("POST", "/chat", alice.token, map[string]any{"message": "Name this chat, slowly", "stream": true}).want(t, 200).body
		took := time.Since(start)
		id := regexp.MustCompile(`"sessionId":"([^"]+)"`).FindSubmatch(body)
		if !release.Stop() {
			t.Fatalf("the response waited %v for the title", took.Round(time.Millisecond))
		}
		if id == nil {
			t.Fatalf("no session in the stream: %s", body)
		}
		if s := h.session(string(id[1])); s.TitleSource != sessions.TitleDefault {
			t.Fatalf("titled before the title was given: %q (%s)", s.Title, s.TitleSource)
		}
		close(held)
		h.idle()
		if s := h.session(string(id[1])); s.Title != "Slow title" || s.TitleSource != sessions.TitleGenerated {
			t.Fatalf("after the job: %q (%s)", s.Title, s.TitleSource)
		}
	})
}
