package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

func testAppendAndRead(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	e.Clock.Advance(time.Hour)
	var want []history.Message
	tokens := 0
	for i := 0; i < 7; i++ {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		m := e.Say(t, s, role, fmt.Sprintf("message number %d", i))
		if m.Seq != i || m.ID == "" || m.SessionID != s.ID || !m.CreatedAt.Equal(e.Clock.Now()) {
			t.Fatalf("message %d = %+v", i, m)
		}
		probe := m
		if m.Tokens != e.Tokens.Count(s.Model, &probe) || m.Tokens < 5 {
			t.Errorf("tokens = %d, want the tiktoken count", m.Tokens)
		}
		tokens += m.Tokens
		want = append(want, m)
		e.Clock.Advance(time.Minute)
	}
	got := e.Reload(t, s)
	last := Epoch.Add(time.Hour + 6*time.Minute)
	if got.MessageCount != 7 || got.NextSeq != 7 || got.TokenCount != tokens {
		t.Errorf("counters = %d/%d/%d, want 7/7/%d", got.MessageCount, got.NextSeq, got.TokenCount, tokens)
	}
	if !got.LastActivityAt.Equal(last) || !got.UpdatedAt.Equal(last) || !got.ExpiresAt.Equal(last.Add(30*sessions.Day)) {
		t.Errorf("activity not recorded: %+v", got)
	}

	// Oldest first, three pages of 3, 3, 1.
	var pages [][]int
	req := history.PageRequest{Limit: 3}
	for {
		p := Must[*history.Page](t)(e.History.Page(ctx, got, req))
		var seqs []int
		for _, m := range p.Messages {
			seqs = append(seqs, m.Seq)
		}
		pages = append(pages, seqs)
		if p.NextPageToken == "" {
			break
		}
		req.PageToken = p.NextPageToken
	}
	if fmt.Sprint(pages) != "[[0 1 2] [3 4 5] [6]]" {
		t.Errorf("oldest-first pages = %v", pages)
	}
	// Newest first.
	p1 := Must[*history.Page](t)(e.History.Page(ctx, got, history.PageRequest{Limit: 3, Order: history.NewestFirst}))
	p2 := Must[*history.Page](t)(e.History.Page(ctx, got, history.PageRequest{Limit: 3, Order: history.NewestFirst, PageToken: p1.NextPageToken}))
	p3 := Must[*history.Page](t)(e.History.Page(ctx, got, history.PageRequest{Limit: 3, Order: history.NewestFirst, PageToken: p2.NextPageToken}))
	if seqs := append(append(seqOf(p1.Messages), seqOf(p2.Messages)...), seqOf(p3.Messages)...); fmt.Sprint(seqs) != "[6 5 4 3 2 1 0]" || p3.NextPageToken != "" {
		t.Errorf("newest-first = %v (last token %q)", seqs, p3.NextPageToken)
	}
	if all := e.All(t, got); !reflect.DeepEqual(all, want) {
		t.Errorf("stored messages differ from appended ones:\n%+v\n%+v", all, want)
	}
	// A token is bound to its order and session.
	_, err := e.History.Page(ctx, got, history.PageRequest{Order: history.NewestFirst, PageToken: req.PageToken})
	WantCode(t, err, errs.EINVALID)
	_, err = e.History.Page(ctx, got, history.PageRequest{Order: "sideways"})
	WantCode(t, err, errs.EINVALID)

	r := Must[[]history.Message](t)(e.DB.MessageRange(ctx, got.ID, 2, 4))
	if fmt.Sprint(seqOf(r)) != "[2 3 4]" {
		t.Errorf("range 2..4 = %v", seqOf(r))
	}
	r = Must[[]history.Message](t)(e.DB.MessageRange(ctx, got.ID, 5, 50))
	if fmt.Sprint(seqOf(r)) != "[5 6]" {
		t.Errorf("range 5..50 = %v", seqOf(r))
	}
}

func seqOf(msgs []history.Message) []int {
	out := make([]int, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

func testIdempotency(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	batch := []history.Draft{
		{Role: history.RoleUser, Content: "what is 2+2?"},
		{Role: history.RoleAssistant, Content: "4", Metadata: history.MessageMetadata{Model: "m", FinishReason: "stop"}},
	}
	first := Must[[]history.Message](t)(e.Append(ctx, s, "req-1", batch...))
	e.Clock.Advance(time.Minute)
	again := Must[[]history.Message](t)(e.Append(ctx, s, "req-1", batch...))
	if !reflect.DeepEqual(first, again) {
		t.Errorf("retry returned other messages:\n%+v\n%+v", first, again)
	}
	after := e.Reload(t, s)
	if after.MessageCount != 2 || after.NextSeq != 2 || !after.UpdatedAt.Equal(Epoch) {
		t.Errorf("retry wrote: %+v", after)
	}
	// The same key with other content, fewer or more messages: conflict.
	for name, b := range map[string][]history.Draft{
		"OtherContent": {batch[0], {Role: history.RoleAssistant, Content: "5"}},
		"Fewer":        batch[:1],
		"More":         append(append([]history.Draft{}, batch...), history.Draft{Role: history.RoleUser, Content: "x"}),
	} {
		_, err := e.Append(ctx, s, "req-1", b...)
		if errs.CodeOf(err) != errs.ECONFLICT {
			t.Errorf("%s: err = %v, want conflict", name, err)
		}
	}
	single := Must[[]history.Message](t)(e.Append(ctx, s, "req-2", batch[0]))
	if single[0].Seq != 2 || single[0].ClientMessageID != "req-2" {
		t.Errorf("new key: %+v", single[0])
	}
	if got := e.Reload(t, s); got.MessageCount != 3 || len(e.All(t, s)) != 3 {
		t.Errorf("after conflicts: %d messages", got.MessageCount)
	}
}

func testAppendNotWritable(t *testing.T, e *Env) {
	ctx := context.Background()
	for _, a := range []sessions.Action{sessions.ActionArchive, sessions.ActionDelete} {
		s := e.NewSession(t, "alice")
		e.Say(t, s, history.RoleUser, "hello")
		if a == sessions.ActionArchive {
			Must[*sessions.Session](t)(e.Sessions.Archive(ctx, "alice", s.ID))
		} else {
			Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
		}
		_, err := e.Append(ctx, s, "", history.Draft{Role: history.RoleUser, Content: "more"})
		WantCode(t, err, errs.EPRECONDITION)
		if got := e.Reload(t, s); got.MessageCount != 1 || len(e.All(t, got)) != 1 {
			t.Errorf("%s: append wrote to a %s session", a, got.Status)
		}
	}
	_, err := e.Append(ctx, &sessions.Session{ID: "missing", UserID: "alice"}, "", history.Draft{Role: history.RoleUser, Content: "x"})
	WantCode(t, err, errs.ENOTFOUND)
}

// testAppendOtherUser: the append transaction checks ownership itself.
func testAppendOtherUser(t *testing.T, e *Env) {
	s := e.NewSession(t, "alice")
	forged := s.Clone()
	forged.UserID = "mallory"
	_, err := e.Append(context.Background(), forged, "", history.Draft{Role: history.RoleUser, Content: "hi"})
	WantCode(t, err, errs.ENOTFOUND)
	if got := e.Reload(t, s); got.MessageCount != 0 {
		t.Errorf("another user appended %d messages", got.MessageCount)
	}
}

func testBadInput(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	e.Say(t, s, history.RoleUser, "a first message")
	cases := map[string][]history.Draft{
		"EmptyContent":       {{Role: history.RoleUser, Content: ""}},
		"BlankContent":       {{Role: history.RoleUser, Content: " \n\t"}},
		"UnknownRole":        {{Role: "wizard", Content: "abracadabra"}},
		"ContentTooLarge":    {{Role: history.RoleUser, Content: strings.Repeat("x", history.MaxContentBytes+1)}},
		"InvalidUTF8":        {{Role: history.RoleUser, Content: "\xff\xfe"}},
		"ToolWithoutCall":    {{Role: history.RoleTool, Content: "42", ToolCallID: "call_nowhere"}},
		"ToolWithoutCallID":  {{Role: history.RoleTool, Content: "42"}},
		"ToolCallsOnUser":    {{Role: history.RoleUser, Content: "x", ToolCalls: []history.ToolCall{{ID: "c", Function: history.FunctionCall{Name: "f"}}}}},
		"DuplicateToolCall":  {{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c", Function: history.FunctionCall{Name: "f"}}, {ID: "c", Function: history.FunctionCall{Name: "f"}}}}},
		"BadFunctionName":    {{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c", Function: history.FunctionCall{Name: "no spaces"}}}}},
		"NegativeDuration":   {{Role: history.RoleAssistant, Content: "x", Metadata: history.MessageMetadata{DurationMs: -1}}},
		"GoodThenBad":        {{Role: history.RoleUser, Content: "fine"}, {Role: "robot", Content: "not fine"}},
		"ToolCallIDOnUser":   {{Role: history.RoleUser, Content: "x", ToolCallID: "c"}},
		"Empty batch":        {},
		"AssistantNoContent": {{Role: history.RoleAssistant}},
	}
	for name, batch := range cases {
		_, err := e.Append(ctx, s, "", batch...)
		if errs.CodeOf(err) != errs.EINVALID {
			t.Errorf("%s: err = %v, want invalid_argument", name, err)
		}
	}
	_, err := e.Append(ctx, s, "bad key with spaces", history.Draft{Role: history.RoleUser, Content: "x"})
	WantCode(t, err, errs.EINVALID)
	tooMany := make([]history.Draft, history.MaxBatch+1)
	for i := range tooMany {
		tooMany[i] = history.Draft{Role: history.RoleUser, Content: "x"}
	}
	_, err = e.Append(ctx, s, "", tooMany...)
	WantCode(t, err, errs.EINVALID)
	// Unknown keys in a message or its metadata, as a client would send them.
	for _, raw := range []string{
		`{"role":"user","content":"x","metadata":{"model":"m","colour":"red"}}`,
		`{"role":"user","content":"x","seq":7}`,
	} {
		var d history.Draft
		WantCode(t, json.Unmarshal([]byte(raw), &d), errs.EINVALID)
	}
	var md sessions.Metadata
	WantCode(t, json.Unmarshal([]byte(`{"topic":"x","owner":"mallory"}`), &md), errs.EINVALID)
	var upd sessions.Update
	WantCode(t, json.Unmarshal([]byte(`{"title":"x","status":"active"}`), &upd), errs.EINVALID)

	if got := e.Reload(t, s); got.MessageCount != 1 || got.NextSeq != 1 || len(e.All(t, got)) != 1 {
		t.Errorf("bad input wrote something: %+v", got)
	}
}

func testToolExchanges(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	e.Say(t, s, history.RoleUser, "weather in Paris and Rome?")
	// The call and its results in one append.
	Must[[]history.Message](t)(e.Append(ctx, s, "",
		history.Draft{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call("c1"), call("c2")}},
		history.Draft{Role: history.RoleTool, ToolCallID: "c2", Content: "sunny"},
		history.Draft{Role: history.RoleTool, ToolCallID: "c1", Content: "rainy"},
		history.Draft{Role: history.RoleAssistant, Content: "Paris rainy, Rome sunny."},
	))
	// A call, then its result in a later append.
	Must[[]history.Message](t)(e.Append(ctx, s, "", history.Draft{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call("c3")}}))
	_, err := e.Append(ctx, s, "", history.Draft{Role: history.RoleTool, ToolCallID: "c1", Content: "answered already"})
	WantCode(t, err, errs.EINVALID)
	res := Must[[]history.Message](t)(e.Append(ctx, s, "", history.Draft{Role: history.RoleTool, ToolCallID: "c3", Content: "ok"}))
	if res[0].Seq != 6 {
		t.Errorf("tool result seq = %d", res[0].Seq)
	}
	// A result may not answer a call twice, nor one abandoned by a later message.
	_, err = e.Append(ctx, s, "", history.Draft{Role: history.RoleTool, ToolCallID: "c3", Content: "again"})
	WantCode(t, err, errs.EINVALID)
	Must[[]history.Message](t)(e.Append(ctx, s, "", history.Draft{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call("c4")}}))
	e.Say(t, s, history.RoleUser, "never mind")
	_, err = e.Append(ctx, s, "", history.Draft{Role: history.RoleTool, ToolCallID: "c4", Content: "late"})
	WantCode(t, err, errs.EINVALID)

	all := e.All(t, s)
	if len(all) != 9 || len(all[1].ToolCalls) != 2 || all[1].ToolCalls[1] != call("c2") || all[2].ToolCallID != "c2" {
		t.Errorf("stored tool exchange = %+v", all)
	}
}

func call(id string) history.ToolCall {
	return history.ToolCall{ID: id, Type: "function", Function: history.FunctionCall{Name: "lookup", Arguments: `{"q":"` + id + `"}`}}
}

func testPurge(t *testing.T, e *Env) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	keep := e.NewSession(t, "alice")
	for i := 0; i < 12; i++ {
		e.Say(t, s, history.RoleUser, fmt.Sprintf("m%d", i))
	}
	Must[[]history.Message](t)(e.Append(ctx, s, "key", history.Draft{Role: history.RoleUser, Content: "keyed"}))
	e.Say(t, keep, history.RoleUser, "stays")

	_, err := PurgeAs(ctx, e.Sessions, "alice", s.ID)
	WantCode(t, err, errs.EPRECONDITION) // only a deleted session can be purged
	Must[*sessions.Session](t)(e.Sessions.Delete(ctx, "alice", s.ID))
	_, err = PurgeAs(ctx, e.Sessions, "mallory", s.ID)
	WantCode(t, err, errs.ENOTFOUND)
	n := Must[int](t)(PurgeAs(ctx, e.Sessions, "alice", s.ID))
	if n < 15 || n > 17 { // how many documents a context takes is the store's choice
		t.Errorf("purge deleted %d documents, want the session, its 13 messages and a context of 1 to 3 documents", n)
	}
	_, err = e.Sessions.Get(ctx, "alice", s.ID)
	WantCode(t, err, errs.ENOTFOUND)
	_, err = e.Sessions.Restore(ctx, "alice", s.ID)
	WantCode(t, err, errs.ENOTFOUND)
	_, err = PurgeAs(ctx, e.Sessions, "alice", s.ID)
	WantCode(t, err, errs.ENOTFOUND)
	left := Must[[]history.Message](t)(e.DB.ListMessages(ctx, history.ListQuery{SessionID: s.ID, Limit: 100}))
	if len(left) != 0 {
		t.Errorf("%d messages left after purge", len(left))
	}
	_, err = e.Append(ctx, s, "", history.Draft{Role: history.RoleUser, Content: "ghost"})
	WantCode(t, err, errs.ENOTFOUND)
	if got := e.All(t, keep); len(got) != 1 {
		t.Errorf("purge touched another session: %d messages", len(got))
	}
}

// testConcurrentAppends: 8 writers append 20 messages each to one session
// (more writers only make the emulator retry longer, under the suite's
// other tests, without another interleaving to check). Every seq from 0
// to 159 is used exactly once and the counters agree.
func testConcurrentAppends(t *testing.T, e *Env) {
	const writers, each = 8, 20
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	var wg sync.WaitGroup
	errc := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := e.Append(ctx, s, "", history.Draft{Role: history.RoleUser, Content: fmt.Sprintf("writer %d message %d", w, i)})
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("append failed: %v", err)
	}
	all := e.All(t, s)
	seen := map[string]bool{}
	tokens := 0
	for i, m := range all {
		if m.Seq != i {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		if seen[m.Content] {
			t.Fatalf("%q stored twice", m.Content)
		}
		seen[m.Content] = true
		tokens += m.Tokens
	}
	got := e.Reload(t, s)
	if len(all) != writers*each || got.MessageCount != writers*each || got.NextSeq != writers*each || got.TokenCount != tokens {
		t.Errorf("%d messages; counters %d/%d/%d (tokens %d)", len(all), got.MessageCount, got.NextSeq, got.TokenCount, tokens)
	}
}
