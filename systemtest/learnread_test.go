package systemtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/storetest"
)

// TestLearningStartsFromTheTurnsRead: the learning after a turn starts
// from the memory the turn read for its block, so it reads 2 documents:
// here, a first learning with no memory yet, what its save checks (the
// session and the memory, in its transaction); with a memory, its live
// facts and the memory (the purge fence: see the next test). When the
// memory changed in between (here, the user edits the profile while the
// model extracts), the save is refused and learning starts again from a
// fresh read, keeping both the edit and what it learned.
func TestLearningStartsFromTheTurnsRead(t *testing.T) {
	h := newHarnessOn(t, "firestore", func(c *app.Config) { c.LongTermMemory = true })
	alice := h.signUp()
	var extractions atomic.Int64
	var edit func()
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		if r.Messages[0].Content != prompts.Extract {
			return llmtest.Echo(r)
		}
		if extractions.Add(1) == 2 && edit != nil {
			edit() // the user edits their memory while it is learned from
		}
		if strings.Contains(r.Messages[1].Content, "pastry") {
			return llmtest.Response{Content: `{"profile":null,"facts":[{"content":"The user bakes pastry.","category":"preference","confidence":0.9}]}`}
		}
		return llmtest.Response{Content: `{"profile":null,"facts":[{"content":"The user runs a bakery.","category":"preference","confidence":0.9}]}`}
	})
	id := h.newSession(alice.token, nil)
	turns := 0
	reads := func(msg string) int64 {
		t.Helper()
		turns++
		h.clock.Advance(time.Minute) // the slots known taken are free again
		before := h.counter.Snapshot()
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": msg, "clientMessageId": fmt.Sprint("k", turns)}).want(t, 200)
		h.idle()
		return h.counter.Snapshot().Sub(before).Reads
	}
	// Turns 1 and 2 learn nothing; turn 3 (6 messages) learns; turns 4
	// and 5 do not.
	reads("I run a bakery.")
	reads("It is busy.")
	learning := reads("We open at six.")
	if extractions.Load() != 1 {
		t.Fatalf("%d extractions after 3 turns, want 1", extractions.Load())
	}
	// The next batch: the profile changes between the turn's read and the save.
	edit = func() {
		h.do("PATCH", "/memory/profile", alice.token, map[string]any{"focus": "A second shop."}).want(t, 200)
	}
	plain := reads("I bake pastry. 0")
	if learning != plain+2 {
		t.Errorf("a turn that learns reads %d documents, a turn that does not %d; want 2 more (the save's session and memory)", learning, plain)
	}
	for i, msg := range []string{"Mostly croissants.", "Every morning."} {
		reads(fmt.Sprint(msg, " ", i+1))
	}
	if n := extractions.Load(); n != 3 {
		t.Errorf("%d extractions, want 3 (the second batch tried twice)", n)
	}
	v := h.memory(alice.token)
	var facts []string
	for _, f := range v.Facts {
		facts = append(facts, f.Content)
	}
	if v.Profile.Focus.Text != "A second shop." || len(facts) != 2 {
		t.Errorf("memory after learning around an edit: focus %q, facts %q", v.Profile.Focus.Text, facts)
	}
}

// TestPurgeFencesLearningFromTheTurnsRead: learning that starts from the
// memory a turn read saves nothing from a session purged before its save:
// the purge's forgetting changes the memory, which refuses the save, and
// the retry finds the session gone.
func TestPurgeFencesLearningFromTheTurnsRead(t *testing.T) {
	h := newHarnessOn(t, "firestore", func(c *app.Config) { c.LongTermMemory = true })
	alice := h.signUp()
	started, release := make(chan struct{}, 1), make(chan struct{})
	var extractions atomic.Int64
	h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
		if r.Messages[0].Content != prompts.Extract {
			return llmtest.Echo(r)
		}
		if extractions.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return llmtest.Response{Content: `{"profile":null,"facts":[{"content":"The user keeps bees.","category":"personal","confidence":0.9}]}`}
	})
	// Her memory exists before (the fence is a change of it).
	h.do("PATCH", "/memory/profile", alice.token, map[string]any{"work": "Beekeeper."}).want(t, 200)
	id := h.newSession(alice.token, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ { // the third turn's reply claims a batch
			h.do("POST", "/chat", alice.token, map[string]any{"sessionId": id, "message": fmt.Sprint("I keep bees ", i)}).want(t, 200)
		}
	}()
	<-started
	h.do("DELETE", "/sessions/"+id, alice.token, nil).want(t, 200)
	if _, err := storetest.PurgeAs(context.Background(), h.app.Sessions, alice.uid, id); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	h.idle()
	v := h.memory(alice.token)
	if len(v.Facts) != 0 || v.Profile.Work.Text != "Beekeeper." {
		t.Errorf("memory after a purge during learning: facts %+v, work %q", v.Facts, v.Profile.Work.Text)
	}
	if n := extractions.Load(); n != 2 {
		t.Errorf("%d extractions, want 2 (the save from the turn's read refused, the retry's source gone)", n)
	}
}
