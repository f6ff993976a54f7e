package history_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// countingSummarizer answers every request and counts them.
type countingSummarizer struct{ calls int }

func (c *countingSummarizer) Summarize(_ context.Context, model, previous string, msgs []history.Message) (string, string, error) {
	c.calls++
	return fmt.Sprintf("summary %d of %d messages", c.calls, len(msgs)), model, nil
}

// failingSave fails the next saves of compaction records, as a store that
// cannot commit would.
type failingSave struct {
	*inprocdb.DB
	failures int
}

func (f *failingSave) SaveCompaction(ctx context.Context, id string, c *history.Compaction, fn func(*sessions.Session, *history.Tail) error) error {
	if f.failures > 0 {
		f.failures--
		return errs.Wrap(errs.EUNAVAILABLE, errors.New("commit failed"), "storage unavailable")
	}
	return f.DB.SaveCompaction(ctx, id, c, fn)
}

// TestCompactAfterFailedSave: a compaction whose record cannot be saved
// gives its lease back, so the next turn compacts at once rather than after
// the lease expires (which, on a frozen clock, is never).
func TestCompactAfterFailedSave(t *testing.T) {
	db := &failingSave{DB: inprocdb.New(), failures: 1}
	env := storetest.NewEnv(t, db)
	sum := &countingSummarizer{}
	env.History.Summarizer = sum
	ctx := context.Background()
	s := storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, "alice", sessions.CreateInput{
		Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer, BudgetTokens: 300},
	}))
	for i := 0; i < 20; i++ {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		env.Say(t, s, role, fmt.Sprintf("message %d, with enough words in it to fill a small budget soon", i))
	}
	_, err := env.History.Compact(ctx, s.ID, 0)
	storetest.WantCode(t, err, errs.EUNAVAILABLE)
	c, err := env.History.Compact(ctx, s.ID, 0)
	if err != nil {
		t.Fatalf("the compaction after a failed save: %v", err)
	}
	if sum.calls != 2 || c.StartSeq != 0 {
		t.Errorf("%d summarizer calls; record covers %d..%d", sum.calls, c.StartSeq, c.EndSeq)
	}
	cs := storetest.Must[[]history.Compaction](t)(env.DB.ListCompactions(ctx, s.ID))
	if len(cs) != 1 || env.Reload(t, s).Bookkeeping.Summary != c.Summary {
		t.Errorf("%d records; summary %q", len(cs), env.Reload(t, s).Bookkeeping.Summary)
	}
}

// countingRange counts the reads of message ranges.
type countingRange struct {
	*inprocdb.DB
	ranges int
}

func (c *countingRange) MessageRange(ctx context.Context, id string, from, to int) ([]history.Message, error) {
	c.ranges++
	return c.DB.MessageRange(ctx, id, from, to)
}

// recordingSummarizer keeps the seqs of the messages it was given.
type recordingSummarizer struct{ seqs []int }

func (r *recordingSummarizer) Summarize(_ context.Context, model, _ string, msgs []history.Message) (string, string, error) {
	r.seqs = r.seqs[:0]
	for _, m := range msgs {
		r.seqs = append(r.seqs, m.Seq)
	}
	return "a summary", model, nil
}

// TestCompactReadsTheTail: what a compaction folds is in the tail it reads
// for its lease when the session compacts as it goes (after each turn), so
// it reads no messages; only a tail that starts after the first message to
// fold (a session that kept a shorter tail before it turned to summaries)
// makes it read the range.
func TestCompactReadsTheTail(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     sessions.Strategy // the session's strategy while its messages are said
		wantRanges int
	}{
		{"summaries from the start", sessions.StrategySummaryBuffer, 0},
		{"summaries after a token buffer", sessions.StrategyTokenBuffer, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := &countingRange{DB: inprocdb.New()}
			env := storetest.NewEnv(t, db)
			sum := &recordingSummarizer{}
			env.History.Summarizer = sum
			ctx := context.Background()
			s := storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, "alice", sessions.CreateInput{
				Context: sessions.ContextSettings{Strategy: tc.before, BudgetTokens: 300},
			}))
			var records []*history.Compaction
			compact := func() {
				c, err := env.History.Compact(ctx, s.ID, 0)
				if errors.Is(err, history.ErrNothingToCompact) {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(sum.seqs) != c.EndSeq-c.StartSeq+1 || sum.seqs[0] != c.StartSeq || sum.seqs[len(sum.seqs)-1] != c.EndSeq {
					t.Errorf("summarized %v for a record of %d..%d", sum.seqs, c.StartSeq, c.EndSeq)
				}
				records = append(records, c)
			}
			for i := 0; i < 20; i++ {
				role := history.RoleUser
				if i%2 == 1 {
					role = history.RoleAssistant
				}
				env.Say(t, s, role, fmt.Sprintf("message %d, with enough words in it to fill a small budget soon", i))
				if tc.before == sessions.StrategySummaryBuffer {
					compact()
				}
			}
			if tc.before != sessions.StrategySummaryBuffer {
				storetest.Must[*sessions.Session](t)(env.Sessions.Update(ctx, "alice", s.ID, sessions.Update{
					Context: &sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer, BudgetTokens: 300}}))
				compact()
			}
			if len(records) == 0 || db.ranges != tc.wantRanges {
				t.Errorf("%d compactions read %d message ranges, want %d", len(records), db.ranges, tc.wantRanges)
			}
		})
	}
}
