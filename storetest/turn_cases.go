package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/sessions"
)

// testTurns: a turn's storage reads and writes what it says in one unit.
func testTurns(t *testing.T, e *Env) {
	ctx := context.Background()
	turns, ok := e.DB.(chat.TurnStore)
	if !ok {
		t.Fatal("the store does not implement chat.TurnStore")
	}
	day := "2026-01-15"
	id := ids.New()
	q := chat.TurnQuery{UserID: "alice", SessionID: id, New: true, Key: "k1", ReplyID: history.KeyedReplyID("k1"), Day: day, Slots: []int{0, 1, 2}}

	// A turn that starts its session creates it in the same commit.
	st := Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, appendPlan(e, q, "first")))
	if st.Session == nil || st.Session.NextSeq != 1 || st.Asked == nil || st.Asked.Content != "first" || len(st.Tail.Messages) != 1 {
		t.Fatalf("after the first turn: %+v", st)
	}
	// Read back: the key's message, no reply, slots free, nothing spent.
	read := Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if read.Asked == nil || read.Asked.ID != history.KeyedMessageID("k1", 0) || read.Answer != nil ||
		len(read.Slots) != 3 || read.DayTokens != 0 || read.Session.MessageCount != 1 {
		t.Fatalf("read back: %+v", read)
	}

	// A plan's refusal comes back as it is, with the state the plan was
	// given, as read (a cache in front of the store may keep it); nothing
	// is written.
	refused, err := turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) {
		return nil, errs.Errorf(errs.ERATELIMITED, "refused by the plan")
	})
	if errs.CodeOf(err) != errs.ERATELIMITED || refused == nil || refused.Session == nil || refused.Session.MessageCount != 1 ||
		len(refused.Tail.Messages) != 1 || len(refused.Slots) != 3 {
		t.Fatalf("a refused plan: %+v, %v", refused, err)
	}

	// Finishing from the returned state writes the reply, a slot, the
	// spend and the session's answering lease, without reading again.
	lease := &sessions.Answering{Seq: 0, ReplyID: q.ReplyID, Key: q.Key, Op: sessions.Operation{Kind: sessions.OpTurn},
		Token: "t1", Until: Epoch.Add(time.Minute)}
	done := Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, st, func(st *chat.TurnState) (*chat.TurnWrite, error) {
		s := st.Session.Clone()
		m, tl, err := e.History.AppendOne(s, st.Tail, "", history.KeyedReplyID(q.Key), history.Draft{Role: history.RoleAssistant, Content: "reply"})
		if err != nil {
			return nil, err
		}
		s.Bookkeeping.Answering = lease
		return &chat.TurnWrite{Session: s, Tail: tl, Messages: []history.Message{m}, Slot: 2, Minute: 7, Tokens: 40}, nil
	}))
	if done.Answer == nil || done.Answer.Content != "reply" || done.Slots[2] != 7 || done.DayTokens != 40 || !reflect.DeepEqual(done.Session.Bookkeeping.Answering, lease) {
		t.Fatalf("after finishing: %+v", done)
	}
	read = Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if read.Answer == nil || read.Answer.Seq != 1 || read.Slots[2] != 7 || read.DayTokens != 40 ||
		!reflect.DeepEqual(read.Session.Bookkeeping.Answering, lease) || read.Session.NextSeq != 2 || len(read.Tail.Messages) != 2 {
		t.Fatalf("read back after finishing: %+v", read)
	}
	// The lease is given back by writing the session without it.
	done = Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, done, func(st *chat.TurnState) (*chat.TurnWrite, error) {
		s := st.Session.Clone()
		s.Bookkeeping.Answering = nil
		return &chat.TurnWrite{Session: s, Slot: chat.NoSlot}, nil
	}))
	read = Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if done.Session.Bookkeeping.Answering != nil || read.Session.Bookkeeping.Answering != nil {
		t.Fatalf("the lease was not given back: %+v, read back %+v", done.Session.Bookkeeping.Answering, read.Session.Bookkeeping.Answering)
	}

	// A state gone stale is planned again on what is stored now.
	stale := done
	e.Say(t, read.Session, history.RoleUser, "meanwhile")
	q2 := q
	q2.Key, q2.ReplyID = "k2", history.KeyedReplyID("k2")
	st = Must[*chat.TurnState](t)(turns.RunTurn(ctx, q2, stale, appendPlan(e, q2, "after")))
	if st.Asked == nil || st.Asked.Seq != 3 || st.Session.NextSeq != 4 {
		t.Fatalf("a stale state was not replanned: %+v", st.Asked)
	}

	// Concurrent turns in one session: every message stored once, seqs
	// gapless, spend exact.
	const n = 8
	concurrently(t, n, func(i int) error {
		qi := q
		qi.Key = fmt.Sprint("c", i)
		qi.ReplyID = history.KeyedReplyID(qi.Key) // each turn's own reply
		_, err := turns.RunTurn(ctx, qi, nil, func(st *chat.TurnState) (*chat.TurnWrite, error) {
			w, err := appendPlan(e, qi, fmt.Sprint("concurrent ", i))(st)
			if w != nil {
				w.Tokens = 5
			}
			return w, err
		})
		return err
	})
	s := e.Reload(t, read.Session)
	all := e.All(t, s)
	for i, m := range all {
		if m.Seq != i {
			t.Fatalf("seq %d at %d", m.Seq, i)
		}
	}
	if len(all) != 4+n || s.MessageCount != 4+n || s.NextSeq != 4+n {
		t.Fatalf("%d messages, count %d, next %d", len(all), s.MessageCount, s.NextSeq)
	}
	read = Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if read.DayTokens != 40+5*n || len(read.Tail.Messages) != 4+n {
		t.Fatalf("after concurrent turns: %d tokens, tail of %d", read.DayTokens, len(read.Tail.Messages))
	}

	// Another user's turn on the same day and slots starts from zero.
	other := Must[*chat.TurnState](t)(turns.RunTurn(ctx, chat.TurnQuery{UserID: "bob", SessionID: ids.New(), Day: day, Slots: []int{0, 1, 2}}, nil,
		func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if other.Session != nil || other.DayTokens != 0 || other.Slots[2] != 0 {
		t.Fatalf("bob's state: %+v", other)
	}
}

// testDrafts: a streaming turn's draft is saved, stopped from outside,
// taken over by a later streaming turn, and ended with the reply.
func testDrafts(t *testing.T, e *Env) {
	ctx := context.Background()
	turns, ok := e.DB.(chat.TurnStore)
	drafts, ok2 := e.DB.(chat.Drafts)
	if !ok || !ok2 {
		t.Fatal("the store does not implement chat.TurnStore and chat.Drafts")
	}
	id := ids.New()
	q := chat.TurnQuery{UserID: "alice", SessionID: id, New: true, Day: "2026-01-15", Draft: true}
	start := func(replyID string) *chat.TurnState {
		t.Helper()
		return Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(st *chat.TurnState) (*chat.TurnWrite, error) {
			w, err := appendPlan(e, q, "stream "+replyID)(st)
			if w != nil {
				w.Draft = &chat.DraftWrite{ReplyID: replyID, UserMessageID: w.Messages[0].ID, Create: true}
			}
			return w, err
		}))
	}
	st := start("r1")
	if st.DraftReplyID != "r1" {
		t.Fatalf("draft after the claim: %q", st.DraftReplyID)
	}
	d := &chat.Draft{SessionID: id, ReplyID: "r1", UserID: "alice", Text: "par", Version: st.DraftVersion}
	if stop, err := drafts.SaveDraft(ctx, d); err != nil || stop {
		t.Fatalf("first save: %v, stop %v", err, stop)
	}
	d.Text = "partial"
	if stop, err := drafts.SaveDraft(ctx, d); err != nil || stop {
		t.Fatalf("second save: %v, stop %v", err, stop)
	}
	// A follower (a stream resumed elsewhere) reads the text so far.
	if got := Must[*chat.TurnState](t)(turns.ReadTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: id, Draft: true})); got.DraftReplyID != "r1" || got.DraftText != "partial" {
		t.Fatalf("the draft read: %q %q", got.DraftReplyID, got.DraftText)
	}
	WantCode(t, drafts.RequestStop(ctx, "bob", id, "r1"), errs.ENOTFOUND)
	WantCode(t, drafts.RequestStop(ctx, "alice", id, "r9"), errs.ENOTFOUND)
	if err := drafts.RequestStop(ctx, "alice", id, "r1"); err != nil {
		t.Fatal(err)
	}
	if stop, err := drafts.SaveDraft(ctx, d); err != nil || !stop {
		t.Fatalf("a save after the stop: %v, stop %v", err, stop)
	}
	// A later streaming turn takes the draft over; the first one's saves
	// are told so, and its end leaves the new draft alone.
	st2 := start("r2")
	if _, err := drafts.SaveDraft(ctx, d); !errors.Is(err, chat.ErrDraftTaken) {
		t.Fatalf("saving a draft taken over: %v", err)
	}
	end := func(st *chat.TurnState, replyID string) *chat.TurnState {
		t.Helper()
		return Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, st, func(st *chat.TurnState) (*chat.TurnWrite, error) {
			if st.DraftReplyID != replyID {
				return nil, nil
			}
			return &chat.TurnWrite{Slot: chat.NoSlot, Draft: &chat.DraftWrite{ReplyID: replyID}}, nil
		}))
	}
	end(st, "r1")
	read := Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if read.DraftReplyID != "r2" {
		t.Fatalf("the first turn's end removed the second's draft: %q", read.DraftReplyID)
	}
	end(st2, "r2")
	read = Must[*chat.TurnState](t)(turns.RunTurn(ctx, q, nil, func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil }))
	if read.DraftReplyID != "" {
		t.Fatalf("the draft outlived its turn: %q", read.DraftReplyID)
	}
	WantCode(t, drafts.RequestStop(ctx, "alice", id, "r2"), errs.ENOTFOUND)
}

// appendPlan is a turn plan that appends one user message under key.
func appendPlan(e *Env, q chat.TurnQuery, content string) func(*chat.TurnState) (*chat.TurnWrite, error) {
	return func(st *chat.TurnState) (*chat.TurnWrite, error) {
		if st.Asked != nil && q.AskedID == "" && q.Key != "" && st.Asked.ClientMessageID == q.Key { // the message under the key is stored already
			if st.Asked.Content != content {
				return nil, errs.Errorf(errs.ECONFLICT, "key %q names another message", q.Key)
			}
			return nil, nil // an earlier commit of this plan landed, its answer lost
		}
		s := st.Session
		if s == nil {
			var err error
			if s, err = e.Sessions.New(q.UserID, sessions.CreateInput{ID: q.SessionID}); err != nil {
				return nil, err
			}
		} else {
			s = s.Clone()
		}
		id := ""
		if q.Key == "" {
			id = ids.New()
		}
		m, t, err := e.History.AppendOne(s, st.Tail, q.Key, id, history.Draft{Role: history.RoleUser, Content: content})
		if err != nil {
			return nil, err
		}
		return &chat.TurnWrite{Session: s, Tail: t, Messages: []history.Message{m}, Slot: chat.NoSlot}, nil
	}
}
