package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// history of a session: what it said, at which day.
type said struct {
	day   time.Duration // after the epoch
	drafs []history.Draft
}

func user(text string) history.Draft { return history.Draft{Role: history.RoleUser, Content: text} }
func assistant(text string) history.Draft {
	return history.Draft{Role: history.RoleAssistant, Content: text}
}

// toolExchange is a question answered after one tool call.
func toolExchange(q string) []history.Draft {
	call := history.ToolCall{ID: "call-" + q, Type: "function", Function: history.FunctionCall{Name: "lookup", Arguments: `{}`}}
	return []history.Draft{user(q), {Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call}},
		{Role: history.RoleTool, ToolCallID: call.ID, Content: "looked up"}, assistant("answer to " + q)}
}

// say stores each batch of what at its day, in order.
func say(t *testing.T, e *storetest.Env, s *sessions.Session, what []said) {
	t.Helper()
	for _, w := range what {
		e.Clock.Set(storetest.Epoch.Add(w.day))
		for _, d := range w.drafs {
			storetest.Must[[]history.Message](t)(e.Append(context.Background(), s, "", d))
		}
	}
}

// contents are the texts of a session's stored messages, oldest first.
func contents(t *testing.T, e *storetest.Env, s *sessions.Session) []string {
	t.Helper()
	var out []string
	for _, m := range e.All(t, e.Reload(t, s)) {
		out = append(out, string(m.Role)+":"+m.Content)
	}
	return out
}

// TestMessageRetention: with a service period of 30 days, messages older
// than it go at the next sweep, in every session, whole exchanges at a
// time (a question a minute older than the period takes its newer reply
// with it; a tool exchange goes whole); a session's own shorter period
// wins, a longer one does not; a session whose every message is old is
// left empty and dated again by its next message. A dry run lists the
// same trims and changes nothing; a second run changes nothing more; the
// counters, the tail and the listing agree with what is stored.
func TestMessageRetention(t *testing.T) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		e := storetest.NewEnv(t, open(t))
		ctx := context.Background()
		plain := e.NewSession(t, "alice")
		short := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, "alice", sessions.CreateInput{MessageRetentionDays: 7}))
		long := storetest.Must[*sessions.Session](t)(e.Sessions.Create(ctx, "bob", sessions.CreateInput{MessageRetentionDays: 365}))
		untouched := e.NewSession(t, "bob")
		day := sessions.Day
		boundary := 15 * day // the cutoff of the 30-day period at day 45
		for _, s := range []*sessions.Session{plain, short, long} {
			say(t, e, s, []said{
				{0, []history.Draft{user("q0"), assistant("a0")}},
				{5 * day, toolExchange("q5")},
				{boundary - time.Minute, []history.Draft{user("q15")}},
				{boundary + time.Minute, []history.Draft{assistant("a15")}},
				{20 * day, []history.Draft{user("q20"), assistant("a20")}},
				{35 * day, []history.Draft{user("q35"), assistant("a35")}},
			})
		}
		say(t, e, untouched, []said{{20 * day, []history.Draft{user("q20")}}})
		e.Clock.Set(storetest.Epoch.Add(45 * day))
		sw := sweeper(e.DB.(store), e.Clock)
		sw.Policy.Messages = 30 * day

		dry, err := sw.Run(ctx, true)
		if err != nil || !dry.Complete || len(dry.PlannedTrims) != 3 {
			t.Fatalf("dry run: %+v %v", dry, err)
		}
		planned := map[string]retention.TrimAction{}
		for _, p := range dry.PlannedTrims {
			planned[p.SessionID] = p
		}
		if p := planned[plain.ID]; p.HistoryFrom != 8 || p.Messages != 8 || !p.Before.Equal(storetest.Epoch.Add(boundary)) {
			t.Errorf("planned for the plain session: %+v", p)
		}
		if p := planned[short.ID]; p.HistoryFrom != 12 || p.Messages != 12 {
			t.Errorf("planned for the 7-day session: %+v", p)
		}
		if got := contents(t, e, plain); len(got) != 12 {
			t.Fatalf("the dry run deleted messages: %v", got)
		}

		r := run(t, sw)
		if r.SessionsTrimmed != 3 || r.MessagesDeleted != 8+12+8 || r.Backlog == nil || r.Backlog.ToTrim != 0 {
			t.Errorf("report: %+v (backlog %+v)", r, r.Backlog)
		}
		want := []string{"user:q20", "assistant:a20", "user:q35", "assistant:a35"}
		for _, s := range []*sessions.Session{plain, long} {
			if got := contents(t, e, s); !equal(got, want) {
				t.Errorf("kept %v, want %v", got, want)
			}
			got := e.Reload(t, s)
			if got.Bookkeeping.HistoryFrom != 8 || got.MessageCount != 4 || got.NextSeq != 12 || !got.Bookkeeping.HistoryStartAt.Equal(storetest.Epoch.Add(20*day)) {
				t.Errorf("session after the trim: from %d, %d messages, next %d, starts %v", got.Bookkeeping.HistoryFrom, got.MessageCount, got.NextSeq, got.Bookkeeping.HistoryStartAt)
			}
			tokens := 0
			for _, m := range e.All(t, got) {
				tokens += m.Tokens
			}
			if got.TokenCount != tokens {
				t.Errorf("token count %d, stored messages hold %d", got.TokenCount, tokens)
			}
			_, tail, err := e.DB.ReadTail(ctx, s.ID)
			if err != nil || len(tail.Messages) != 4 || tail.Messages[0].Seq != 8 || !tail.Complete(got) {
				t.Errorf("tail after the trim: %v (complete %v)", err, tail.Complete(got))
			}
		}
		emptied := e.Reload(t, short)
		if got := contents(t, e, short); len(got) != 0 || emptied.MessageCount != 0 || emptied.TokenCount != 0 ||
			emptied.Bookkeeping.HistoryFrom != 12 || !emptied.Bookkeeping.HistoryStartAt.IsZero() {
			t.Errorf("the 7-day session kept %v; %+v", got, emptied)
		}
		if got := contents(t, e, untouched); len(got) != 1 {
			t.Errorf("a session with nothing due lost messages: %v", got)
		}
		if r := run(t, sw); r.SessionsTrimmed != 0 || r.MessagesDeleted != 0 {
			t.Errorf("a second run trimmed more: %+v", r)
		}

		e.Clock.Advance(time.Hour)
		m := e.Say(t, emptied, history.RoleUser, "back again")
		if got := e.Reload(t, short); m.Seq != 12 || got.MessageCount != 1 || !got.Bookkeeping.HistoryStartAt.Equal(e.Clock.Now()) {
			t.Errorf("after a new message: seq %d, %d messages, starts %v", m.Seq, got.MessageCount, got.Bookkeeping.HistoryStartAt)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cutStore cancels the run after the first trim page, and lets a message
// arrive before each page.
type cutStore struct {
	store
	cancel func()
	before func(id string)
}

func (r cutStore) TrimMessages(ctx context.Context, id string, before, limit int, fn retention.TrimFunc) (int, bool, error) {
	if r.before != nil {
		r.before(id)
	}
	n, done, err := r.store.TrimMessages(ctx, id, before, limit, fn)
	if r.cancel != nil {
		r.cancel()
	}
	return n, done, err
}

// TestTrimResumes: a trim cut off after its first page leaves the session
// due with what is left counted, and the next run finishes it; messages
// stored meanwhile are kept and counted.
func TestTrimResumes(t *testing.T) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		e := storetest.NewEnv(t, open(t))
		s := e.NewSession(t, "alice")
		var old []said
		for i := range 6 {
			old = append(old, said{time.Duration(i) * time.Hour, []history.Draft{user("q"), assistant("a")}})
		}
		say(t, e, s, old)
		e.Clock.Set(storetest.Epoch.Add(10 * sessions.Day))
		ctx, cancel := context.WithCancel(context.Background())
		sw := sweeper(e.DB.(store), e.Clock)
		sw.Policy.Messages = 5 * sessions.Day
		sw.TrimPageSize = 5
		arrived := 0
		sw.Store = cutStore{store: e.DB.(store), cancel: cancel, before: func(string) {
			e.Say(t, s, history.RoleUser, "meanwhile")
			arrived++
		}}
		r, err := sw.Run(ctx, false)
		if err != nil || r.Complete || r.MessagesDeleted != 5 || r.Backlog == nil || r.Backlog.ToTrim != 1 {
			t.Fatalf("cut-off run: %+v %v (backlog %+v)", r, err, r.Backlog)
		}
		if got := e.Reload(t, s); got.Bookkeeping.HistoryFrom != 5 || got.MessageCount != 7+arrived {
			t.Fatalf("after one page: from %d, %d messages", got.Bookkeeping.HistoryFrom, got.MessageCount)
		}
		sw.Store = e.DB.(store)
		r = run(t, sw)
		got := e.Reload(t, s)
		stored := e.All(t, got)
		if r.MessagesDeleted != 7 || got.Bookkeeping.HistoryFrom != 12 || got.MessageCount != arrived || len(stored) != arrived || stored[0].Content != "meanwhile" {
			t.Errorf("resumed: %+v; from %d, %d messages, %d stored", r, got.Bookkeeping.HistoryFrom, got.MessageCount, len(stored))
		}
	})
}

// lastOfMomentStore answers FirstMessageAfter with the last of the
// messages written at the earliest moment after t (a store may give any
// of them), so that the trim must look back for the first.
type lastOfMomentStore struct{ store }

func (r lastOfMomentStore) FirstMessageAfter(ctx context.Context, id string, t time.Time) (int, bool, error) {
	all, err := r.store.MessageRange(ctx, id, 0, 1<<30)
	if err != nil {
		return 0, false, err
	}
	seq, at := 0, time.Time{}
	for _, m := range all {
		if m.CreatedAt.After(t) && (at.IsZero() || !m.CreatedAt.After(at)) {
			seq, at = m.Seq, m.CreatedAt
		}
	}
	return seq, !at.IsZero(), nil
}

// TestTrimFindsTheFirstOfAMoment: whichever of the messages written at
// one moment a store names, the history is kept from the first of them,
// however many there are (more than one read's worth, or a few).
func TestTrimFindsTheFirstOfAMoment(t *testing.T) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		for _, n := range []int{3, 40} {
			e := storetest.NewEnv(t, open(t))
			s := e.NewSession(t, "alice")
			burst := []history.Draft{user("kept question")}
			for i := range n {
				burst = append(burst, assistant(fmt.Sprint("kept answer ", i)))
			}
			say(t, e, s, []said{{0, []history.Draft{user("q0"), assistant("a0")}}, {10 * sessions.Day, burst}})
			e.Clock.Set(storetest.Epoch.Add(12 * sessions.Day))
			sw := sweeper(e.DB.(store), e.Clock)
			sw.Policy.Messages = 5 * sessions.Day
			sw.Store = lastOfMomentStore{e.DB.(store)}
			if r := run(t, sw); r.MessagesDeleted != 2 {
				t.Errorf("%d at one moment: deleted %d, want 2", n, r.MessagesDeleted)
			}
			if got := contents(t, e, s); len(got) != n+1 || got[0] != "user:kept question" {
				t.Errorf("%d at one moment: kept %d from %v", n, len(got), got[:1])
			}
		}
	})
}
