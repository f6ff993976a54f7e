package chat_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// TestTurn: a turn stores the question and the reply, sends the model the
// operator's prompt and the conversation, names a new session after its
// first exchange, charges the day, and continues the session it names.
func TestTurn(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	first := w.turn(t, chat.TurnRequest{Message: "Plan a trip to Bergen please"})
	if first.Session == nil || first.User.Content != "Plan a trip to Bergen please" || first.Reply.Content != "re: Plan a trip to Bergen please" ||
		first.Reply.ParentSeq != first.User.Seq || first.Replayed {
		t.Fatalf("first turn: %+v", first)
	}
	if req := w.model.last(); req.System != "You are a test assistant." || req.Model != "gpt-4o-mini" || len(req.Messages) != 1 {
		t.Errorf("the model was sent %+v", req)
	}
	s, err := w.svc.Sessions.Get(context.Background(), "alice", first.Session.ID)
	if err != nil || s.Title != "Plan a trip" || s.NextSeq != 2 {
		t.Fatalf("session after the first turn: %+v %v", s, err)
	}
	second := w.turn(t, chat.TurnRequest{SessionID: s.ID, Message: "And the fjords?"})
	if req := w.model.last(); len(req.Messages) != 3 || req.Messages[0].Content != first.User.Content || second.User.Seq != 2 {
		t.Errorf("the second turn sent %d messages: %+v", len(req.Messages), req.Messages)
	}
	if w.titler.calls.Load() != 1 {
		t.Errorf("titled %d times, want once", w.titler.calls.Load())
	}
	u, err := w.db.UsageOn(context.Background(), "alice", chat.Day(w.clock.Now()), 0)
	if err != nil || u.Days[chat.Day(w.clock.Now())] == 0 {
		t.Errorf("the day's spend: %+v %v", u, err)
	}
}

// TestTurnRefusals: what a turn refuses, before the model is called, and
// with which code.
func TestTurnRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits chat.Limits
		setup  func(t *testing.T, w *world) chat.TurnRequest
		code   errs.Code
	}{
		{"an empty message", chat.Limits{}, func(*testing.T, *world) chat.TurnRequest { return chat.TurnRequest{Message: "  "} }, errs.EINVALID},
		{"a malformed session id", chat.Limits{}, func(*testing.T, *world) chat.TurnRequest {
			return chat.TurnRequest{SessionID: "__x__", Message: "hi"}
		}, errs.EINVALID},
		{"another user's session", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			s := w.turn(t, chat.TurnRequest{UserID: "bob", Message: "mine"}).Session
			return chat.TurnRequest{SessionID: s.ID, Message: "theirs?"}
		}, errs.ENOTFOUND},
		{"an archived session", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			s := w.turn(t, chat.TurnRequest{Message: "hello"}).Session
			if _, err := w.svc.Sessions.Archive(context.Background(), "alice", s.ID); err != nil {
				t.Fatal(err)
			}
			return chat.TurnRequest{SessionID: s.ID, Message: "again"}
		}, errs.EPRECONDITION},
		{"turns per minute spent", chat.Limits{TurnsPerMinute: 1}, func(t *testing.T, w *world) chat.TurnRequest {
			w.turn(t, chat.TurnRequest{Message: "one"})
			return chat.TurnRequest{Message: "two"}
		}, errs.ERATELIMITED},
		{"the day's tokens spent", chat.Limits{TokensPerDay: 5}, func(t *testing.T, w *world) chat.TurnRequest {
			w.turn(t, chat.TurnRequest{Message: "one"})
			return chat.TurnRequest{Message: "two"}
		}, errs.ERATELIMITED},
		{"a key reused for another message", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			s := w.turn(t, chat.TurnRequest{Message: "one", ClientMessageID: "k1"}).Session
			return chat.TurnRequest{SessionID: s.ID, Message: "two", ClientMessageID: "k1"}
		}, errs.ECONFLICT},
		{"regenerate with a message", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			r := w.turn(t, chat.TurnRequest{Message: "one"})
			return chat.TurnRequest{SessionID: r.Session.ID, Regenerate: r.Reply.ID, Message: "not allowed"}
		}, errs.EINVALID},
		{"regenerate a message not in the session", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			r := w.turn(t, chat.TurnRequest{Message: "one"})
			return chat.TurnRequest{SessionID: r.Session.ID, Regenerate: "m_nowhere"}
		}, errs.ENOTFOUND},
		{"edit a reply", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			r := w.turn(t, chat.TurnRequest{Message: "one"})
			return chat.TurnRequest{SessionID: r.Session.ID, Edit: r.Reply.ID, Message: "changed"}
		}, errs.EINVALID},
		{"regenerate an answer to tool results", chat.Limits{}, func(t *testing.T, w *world) chat.TurnRequest {
			w.model.tools = callsWeather(false)
			asked := w.turn(t, chat.TurnRequest{Message: "weather in Oslo", Tools: []chat.Tool{weather}})
			answer := w.turn(t, chat.TurnRequest{SessionID: asked.Session.ID, ToolResults: results(asked.Reply.ToolCalls), Tools: []chat.Tool{weather}})
			return chat.TurnRequest{SessionID: asked.Session.ID, Regenerate: answer.Reply.ID}
		}, errs.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.limits)
			req := tc.setup(t, w)
			req.UserID = "alice"
			before := w.model.calls.Load()
			_, err := w.svc.Turn(context.Background(), req)
			if got := errs.CodeOf(err); got != tc.code {
				t.Fatalf("error %v (%s), want %s", err, got, tc.code)
			}
			if w.model.calls.Load() != before {
				t.Errorf("the model was called for a refused turn")
			}
		})
	}
}

// TestTurnKeys: a keyed turn is done once: its retry replays the stored
// reply without calling the model; a turn whose model failed keeps the
// question, and its retry answers it.
func TestTurnKeys(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	first := w.turn(t, chat.TurnRequest{Message: "hello", ClientMessageID: "k1"})
	calls := w.model.calls.Load()
	again := w.turn(t, chat.TurnRequest{Message: "hello", ClientMessageID: "k1"})
	if !again.Replayed || again.Reply.ID != first.Reply.ID || again.Session.ID != first.Session.ID || w.model.calls.Load() != calls {
		t.Fatalf("the retry: %+v (model calls %d → %d)", again, calls, w.model.calls.Load())
	}

	w.model.fail = errModelDown
	_, err := w.svc.Turn(context.Background(), chat.TurnRequest{UserID: "alice", SessionID: first.Session.ID, Message: "are you there?", ClientMessageID: "k2"})
	if errs.CodeOf(err) != errs.EUPSTREAM {
		t.Fatalf("a failing model: %v", err)
	}
	msgs, err := w.db.ListMessages(context.Background(), history.ListQuery{SessionID: first.Session.ID, Limit: 10})
	if err != nil || len(msgs) != 3 || msgs[2].Content != "are you there?" {
		t.Fatalf("after the failure: %d messages %v", len(msgs), err)
	}
	w.model.fail = nil
	retry := w.turn(t, chat.TurnRequest{SessionID: first.Session.ID, Message: "are you there?", ClientMessageID: "k2"})
	if retry.User.ID != msgs[2].ID || retry.Reply.Content != "re: are you there?" {
		t.Fatalf("the retry answers the stored question: %+v", retry)
	}
}

// TestTurnBranches: a regeneration answers the same question beside the
// old reply; an edit sends a new version beside the old question; the
// model sees only the active branch.
func TestTurnBranches(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	one := w.turn(t, chat.TurnRequest{Message: "one"})
	id := one.Session.ID
	two := w.turn(t, chat.TurnRequest{SessionID: id, Message: "two"})
	regen := w.turn(t, chat.TurnRequest{SessionID: id, Regenerate: two.Reply.ID})
	if regen.User.ID != two.User.ID || regen.Reply.ID == two.Reply.ID || regen.Reply.ParentSeq != two.User.Seq {
		t.Fatalf("regenerated: %+v", regen)
	}
	edit := w.turn(t, chat.TurnRequest{SessionID: id, Edit: two.User.ID, Message: "TWO"})
	if edit.User.ParentSeq != two.User.ParentSeq || edit.User.Content != "TWO" {
		t.Fatalf("edited: %+v", edit.User)
	}
	req := w.model.last()
	var got []string
	for _, m := range req.Messages {
		got = append(got, m.Content)
	}
	if want := []string{"one", "re: one", "TWO"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the edit sent %q, want %q", got, want)
	}
	s, _ := w.svc.Sessions.Get(context.Background(), "alice", id)
	if off := s.OffPath(); len(off) == 0 {
		t.Errorf("no message is off the active branch after an edit: %+v", s.Branches)
	}
}

// TestTurnStreamsAndStops: a streamed reply reaches OnDelta piece by
// piece; a stop requested while it streams stores it as far as it got.
func TestTurnStreamsAndStops(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	var pieces []string
	res := w.turn(t, chat.TurnRequest{Message: "stream me", OnDelta: func(s string) { pieces = append(pieces, s) }})
	if strings.Join(pieces, "") != res.Reply.Content || res.Reply.Content != "re: stream me" {
		t.Fatalf("streamed %q, stored %q", pieces, res.Reply.Content)
	}
	w.model.pieces, w.model.pause = 40, 20*time.Millisecond
	started := make(chan string, 1)
	done := make(chan *chat.TurnResult, 1)
	go func() {
		r, err := w.svc.Turn(context.Background(), chat.TurnRequest{UserID: "alice", SessionID: res.Session.ID,
			Message: "a long answer please, as long as it can be", OnDelta: func(string) {},
			OnStart: func(_ *sessions.Session, _ history.Message, replyID string) { started <- replyID }})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	replyID := <-started
	time.Sleep(150 * time.Millisecond)
	if err := w.svc.Stop(context.Background(), "alice", res.Session.ID, replyID); err != nil {
		t.Fatal(err)
	}
	stopped := <-done
	if stopped == nil || stopped.Reply.ID != replyID || stopped.Reply.Content == "" || len(stopped.Reply.Content) >= len("re: a long answer please, as long as it can be") {
		t.Fatalf("stopped reply: %+v", stopped)
	}
	if err := w.svc.Stop(context.Background(), "alice", res.Session.ID, replyID); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Errorf("stopping a reply no longer in progress: %v", err)
	}
}

// TestInstructions: a session's instructions reach the model after the
// operator's prompt, and count in the context budget, so the history gives
// way to them.
func TestInstructions(t *testing.T) {
	w := newWorld(t, chat.Limits{})
	long := strings.Repeat("Always answer with care. ", 40) // about 200 tokens
	s, err := w.svc.Sessions.Create(context.Background(), "alice", sessions.CreateInput{Instructions: long,
		Context: sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 400}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := w.svc.Sessions.Create(context.Background(), "alice", sessions.CreateInput{
		Context: sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 400}})
	if err != nil {
		t.Fatal(err)
	}
	var sent [2]int
	for i, id := range []string{s.ID, plain.ID} {
		for n := range 8 {
			w.turn(t, chat.TurnRequest{SessionID: id, Message: fmt.Sprint(n, " ", strings.Repeat("word ", 20))})
		}
		req := w.model.last()
		sent[i] = len(req.Messages)
		if want := []string{"", strings.TrimSpace(long)}[1-i]; req.Instructions != want || req.System != "You are a test assistant." {
			t.Errorf("session %d sent instructions %q", i, req.Instructions)
		}
	}
	if sent[0] >= sent[1] {
		t.Errorf("with instructions %d messages fit, without %d: the instructions were not counted", sent[0], sent[1])
	}
}
