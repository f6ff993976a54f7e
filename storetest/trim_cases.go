package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// testTrimStore: retention.TrimStore. Sessions are found by when their
// oldest message was written, or falls due under their own period, in
// pages; the first message after a moment is found by time; a trim page
// deletes the lowest seqs below its bound with their recall exchanges and
// records them gone in the session (counters, ratings, HistoryFrom) and
// its tail in the same write, and the last page dates the history anew.
func testTrimStore(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	own := Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", sessions.CreateInput{MessageRetentionDays: 10}))
	plain := e.NewSession(t, "bob")
	empty := e.NewSession(t, "carol")
	q1 := e.Say(t, own, history.RoleUser, "first question")
	a1 := e.Say(t, own, history.RoleAssistant, "first answer")
	e.Say(t, plain, history.RoleUser, "bob's question")
	Must[*history.Message](t)(history.SetFeedback(ctx, db.(history.FeedbackStore), e.Clock.Now(), "alice", own.ID, a1.ID, &history.Feedback{Rating: history.RatingUp}))
	noErr(t, db.SaveUnit(ctx, recall.Unit{UserID: "alice", SessionID: own.ID, Model: "test/2", Vector: []float32{1, 0},
		Question: recall.Excerpt{ID: q1.ID, Seq: q1.Seq, Content: q1.Content, CreatedAt: q1.CreatedAt},
		Reply:    recall.Excerpt{ID: a1.ID, Seq: a1.Seq, Content: a1.Content, CreatedAt: a1.CreatedAt}}))
	e.Clock.Advance(5 * sessions.Day)
	q2 := e.Say(t, own, history.RoleUser, "second question")
	e.Clock.Advance(time.Second) // of messages stored at one moment, a store may give any
	e.Say(t, own, history.RoleAssistant, "second answer")
	e.Clock.Advance(6 * sessions.Day)
	now := e.Clock.Now()

	if got := e.Reload(t, own); !got.Bookkeeping.HistoryStartAt.Equal(Epoch) || !got.HistoryExpiresAt().Equal(Epoch.Add(10*sessions.Day)) {
		t.Fatalf("history starts %v, due %v", got.Bookkeeping.HistoryStartAt, got.HistoryExpiresAt())
	}
	if got := e.Reload(t, empty); !got.Bookkeeping.HistoryStartAt.IsZero() {
		t.Errorf("a session without messages has a history start: %v", got.Bookkeeping.HistoryStartAt)
	}
	due := func(q retention.TrimQuery, after *retention.Cursor, limit int) []string {
		return idsOf(Must[[]*sessions.Session](t)(db.HistoriesDue(ctx, q, after, limit)))
	}
	if got := due(retention.TrimQuery{OwnPeriod: true, At: now}, nil, 10); !slices.Equal(got, []string{own.ID}) {
		t.Errorf("due under their own period: %v, want alice's", got)
	}
	if got := due(retention.TrimQuery{OwnPeriod: true, At: Epoch.Add(10*sessions.Day - time.Second)}, nil, 10); len(got) != 0 {
		t.Errorf("due a second early: %v", got)
	}
	byStart := retention.TrimQuery{At: Epoch}
	want := idsOf([]*sessions.Session{own, plain})
	slices.Sort(want)
	if got := due(byStart, nil, 10); !slices.Equal(got, want) {
		t.Errorf("histories started by the epoch: %v, want %v", got, want)
	}
	if got := append(due(byStart, nil, 1), due(byStart, &retention.Cursor{ExpiresAt: Epoch, ID: want[0]}, 1)...); !slices.Equal(got, want) {
		t.Errorf("in pages of one: %v, want %v", got, want)
	}
	if n := Must[int](t)(db.CountHistoriesDue(ctx, byStart)); n != 2 {
		t.Errorf("CountHistoriesDue = %d, want 2", n)
	}

	seq, ok, err := db.FirstMessageAfter(ctx, own.ID, Epoch.Add(time.Hour))
	if err != nil || !ok || seq != q2.Seq {
		t.Fatalf("first message after an hour: %d %v %v, want %d", seq, ok, err, q2.Seq)
	}
	if _, ok, err := db.FirstMessageAfter(ctx, own.ID, now); ok || err != nil {
		t.Errorf("a message after now: %v %v", ok, err)
	}

	var calls []bool
	record := func(s *sessions.Session, tl *history.Tail, gone []history.Message, done bool) error {
		calls = append(calls, done)
		history.Trim(s, tl, gone, q2.Seq, done, q2.CreatedAt)
		return nil
	}
	for _, want := range []struct {
		n    int
		done bool
	}{{1, false}, {1, false}, {0, true}} {
		n, done, err := db.TrimMessages(ctx, own.ID, q2.Seq, 1, record)
		if err != nil || n != want.n || done != want.done {
			t.Fatalf("trim page: %d %v %v, want %d %v", n, done, err, want.n, want.done)
		}
	}
	got := e.Reload(t, own)
	if got.Bookkeeping.HistoryFrom != q2.Seq || got.MessageCount != 2 || got.NextSeq != 4 || got.Feedback.Up != 0 || !got.Bookkeeping.HistoryStartAt.Equal(q2.CreatedAt) {
		t.Errorf("after the trim: from %d, %d messages, next %d, %d up, starts %v", got.Bookkeeping.HistoryFrom, got.MessageCount, got.NextSeq, got.Feedback.Up, got.Bookkeeping.HistoryStartAt)
	}
	if all := e.All(t, got); len(all) != 2 || all[0].Seq != q2.Seq {
		t.Errorf("stored after the trim: %d messages from %d", len(all), all[0].Seq)
	}
	_, tail := Must2[*sessions.Session, *history.Tail](t)(db.ReadTail(ctx, own.ID))
	if len(tail.Messages) != 2 || tail.Messages[0].Seq != q2.Seq {
		t.Errorf("tail after the trim: %d messages", len(tail.Messages))
	}
	if n := Must[int](t)(db.CountUnits(ctx, "alice")); n != 0 {
		t.Errorf("%d recall exchanges left of trimmed messages", n)
	}
	if got := due(retention.TrimQuery{OwnPeriod: true, At: now}, nil, 10); len(got) != 0 {
		t.Errorf("still due after the trim: %v", got)
	}
	e.Purge(t, "carol", empty)
	_, _, err = db.TrimMessages(ctx, empty.ID, 1, 10, record)
	WantCode(t, err, errs.ENOTFOUND)
}
