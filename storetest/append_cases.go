package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// testAppends: a client's append reads the session, its tail, its key's
// batch, the quota and the day's spend, and writes messages, session,
// tail, quota and spend in one unit; concurrent appends stay gapless.
func testAppends(t *testing.T, e *Env) {
	ctx := context.Background()
	turns, ok := e.DB.(chat.TurnStore)
	if !ok {
		t.Fatal("the store does not implement chat.TurnStore")
	}
	run := func(q chat.AppendQuery, plan func(*chat.AppendState) (*chat.AppendWrite, error)) error {
		_, err := turns.RunAppend(ctx, q, plan)
		return err
	}
	day := "2026-01-15"
	missing := chat.AppendQuery{UserID: "alice", SessionID: ids.New(), Day: day}
	if err := run(missing, appendsPlan(e, missing, nil, history.Draft{Role: history.RoleUser, Content: "x"})); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Fatalf("an append to no session: %v", err)
	}
	s := e.NewSession(t, "alice")
	q := chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: day}
	two := []history.Draft{{Role: history.RoleUser, Content: "one"}, {Role: history.RoleAssistant, Content: "two"}}
	noErr(t, run(q, appendsPlan(e, q, nil, two...)))
	kq := q
	kq.Key = "batch"
	var seen chat.AppendState
	noErr(t, run(kq, appendsPlan(e, kq, &seen, two...)))
	if seen.Session.NextSeq != 2 || len(seen.Tail.Messages) != 2 || seen.Stored != nil || seen.Usage.MinuteMessages != 2 || seen.Usage.DayTokens != 6 {
		t.Fatalf("the second append read %+v", seen)
	}
	// The key's batch is read whole; nothing is written again.
	noErr(t, run(kq, appendsPlan(e, kq, &seen, two...)))
	if len(seen.Stored) != 2 || seen.Stored[1].Content != "two" || seen.Stored[0].ID != history.KeyedMessageID("batch", 0) ||
		seen.Usage.MinuteMessages != 4 || seen.Usage.DayTokens != 12 || seen.Session.NextSeq != 4 {
		t.Fatalf("the retry read %+v", seen)
	}
	all := e.All(t, e.Reload(t, s))
	if len(all) != 4 || all[0].ID == "" || all[0].ID == all[1].ID || all[2].ID != history.KeyedMessageID("batch", 0) {
		t.Fatalf("stored %+v", all)
	}
	if tail := seen.Tail.Messages; len(tail) != 4 || tail[0].ID != all[0].ID {
		t.Fatalf("the tail's copies: %+v", tail)
	}

	// Concurrent appends: every batch stored once, whole, seqs gapless,
	// quota and spend exact.
	const n = 8
	concurrently(t, n, func(i int) error {
		qi := q
		qi.Key = fmt.Sprint("c", i)
		return run(qi, appendsPlan(e, qi, nil,
			history.Draft{Role: history.RoleUser, Content: fmt.Sprint("q", i)}, history.Draft{Role: history.RoleAssistant, Content: fmt.Sprint("a", i)}))
	})
	all = e.All(t, e.Reload(t, s))
	for i, m := range all {
		if m.Seq != i || (i >= 4 && i%2 == 1 && m.Content != "a"+all[i-1].Content[1:]) {
			t.Fatalf("message %d: seq %d %q", i, m.Seq, m.Content)
		}
	}
	noErr(t, run(q, func(st *chat.AppendState) (*chat.AppendWrite, error) { seen = *st; return nil, nil }))
	if len(all) != 4+2*n || seen.Usage.MinuteMessages != 4+2*n || seen.Usage.DayTokens != 3*(4+2*n) {
		t.Fatalf("%d messages, quota %d, spend %d", len(all), seen.Usage.MinuteMessages, seen.Usage.DayTokens)
	}
	testVersions(t, e, turns)
}

// testVersions: a version names the session and its context as they are:
// a read without writing reports the one a read of the turn sees, an
// append returns the one the next read sees, and an append given an older
// version as IfMatch is shown the current one.
func testVersions(t *testing.T, e *Env, turns chat.TurnStore) {
	ctx := context.Background()
	s := e.NewSession(t, "alice")
	q := chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: "2026-01-15"}
	var seen chat.AppendState
	look := func(q chat.AppendQuery) string {
		t.Helper()
		v, err := turns.RunAppend(ctx, q, func(st *chat.AppendState) (*chat.AppendWrite, error) { seen = *st; return nil, nil })
		noErr(t, err)
		if v != seen.Version {
			t.Fatalf("an append that wrote nothing returned version %q, read %q", v, seen.Version)
		}
		return v
	}
	v0 := look(q)
	ts, err := turns.RunTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: s.ID, Day: q.Day}, nil,
		func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil })
	noErr(t, err)
	if v0 == "" || ts.ContextVersion != v0 {
		t.Fatalf("versions: %q by an append's read, %q by a turn's", v0, ts.ContextVersion)
	}
	q.IfMatch = v0
	v1, err := turns.RunAppend(ctx, q, appendsPlan(e, q, &seen, history.Draft{Role: history.RoleUser, Content: "one"}))
	noErr(t, err)
	if seen.Version != v0 || v1 == v0 || v1 == "" {
		t.Fatalf("an append at %q read %q and left %q", v0, seen.Version, v1)
	}
	if got := look(chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: q.Day}); got != v1 {
		t.Fatalf("the append left %q, the next read sees %q", v1, got)
	}
	if got := look(q); got != v1 { // given the older version: shown the current one
		t.Fatalf("an append given %q as IfMatch read %q, want %q", v0, got, v1)
	}
}

// appendsPlan appends drafts as chat.Append plans it, counting n messages
// against the quota and charging tokens; seen records what it was given.
func appendsPlan(e *Env, q chat.AppendQuery, seen *chat.AppendState, drafts ...history.Draft) func(*chat.AppendState) (*chat.AppendWrite, error) {
	plan, err := e.History.PlanFor(q.UserID, q.SessionID, q.Key, drafts...)
	return func(st *chat.AppendState) (*chat.AppendWrite, error) {
		if err != nil {
			return nil, err
		}
		if seen != nil {
			*seen = *st
		}
		s, t := st.Session.Clone(), st.Tail.Clone()
		msgs, err := plan(s, t, st.Stored)
		if err != nil || len(msgs) == 0 {
			return nil, err
		}
		u := st.Usage
		u.Minute, u.MinuteMessages = 7, u.MinuteMessages+len(msgs)
		return &chat.AppendWrite{Session: s, Tail: t, Messages: msgs, Quota: u, Tokens: 3 * len(msgs)}, nil
	}
}

// concurrently runs fn(0) to fn(n-1) at once and fails on any error.
func concurrently(tb testing.TB, n int, fn func(i int) error) {
	tb.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() { errc <- fn(i) })
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func noErr(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
