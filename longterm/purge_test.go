package longterm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
)

// TestPurgeForgetsWhatWasLearned: facts carry the sessions they were
// learned or confirmed in; purging a session removes it from them, drops
// the facts (live or superseded) it was the only source of, and clears
// profile parts learned from it. A fact confirmed elsewhere stays.
func TestPurgeForgetsWhatWasLearned(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.Sessions.Forget = e.lt.ForgetSessions
		ids := func(fs []longterm.FactView) map[string]longterm.FactView {
			out := map[string]longterm.FactView{}
			for _, f := range fs {
				out[f.Content] = f
			}
			return out
		}
		one := e.NewSession(t, "alice")
		e.model.extract = func(string) string {
			return extraction(map[string]any{"work": "Bakes bread."},
				fact{"The user is vegetarian.", "preference", 0.9}, fact{"The user lives in Berlin.", "personal", 0.9})
		}
		e.converse(t, one, 6, "first session")
		first := ids(e.live(t, "alice"))
		veg, berlin := first["The user is vegetarian."], first["The user lives in Berlin."]
		if len(veg.Sources) != 1 || veg.Sources[0].SessionID != one.ID || veg.Sources[0].StartSeq != 0 || veg.Sources[0].EndSeq != 5 {
			t.Fatalf("a fact's sources: %+v", veg.Sources)
		}
		// The second session confirms one fact, contradicts the other and
		// brings one of its own.
		two := e.NewSession(t, "alice")
		e.model.extract = func(string) string {
			return extraction(nil, fact{"The user is vegetarian now.", "preference", 0.9},
				fact{"The user lives in Oslo now.", "personal", 0.9}, fact{"The user plays the cello.", "personal", 0.9})
		}
		e.model.resolve = func(string) string {
			return fmt.Sprintf(`{"decisions":[{"candidate":1,"decision":"same","existing":%q},{"candidate":2,"decision":"contradicts","existing":%q},{"candidate":3,"decision":"new"}]}`, veg.ID, berlin.ID)
		}
		e.converse(t, two, 6, "second session")
		live := ids(e.live(t, "alice"))
		if got := live["The user is vegetarian."].Sources; len(got) != 2 || got[1].SessionID != two.ID {
			t.Fatalf("a confirmed fact's sources: %+v", got)
		}
		ex, _ := e.lt.ExportUser(ctx, "alice")
		if b, _ := json.Marshal(ex); !strings.Contains(string(b), `"sources":[{"sessionId":"`+one.ID) {
			t.Errorf("export does not show sources: %s", b)
		}

		e.Purge(t, "alice", one)
		live = ids(e.live(t, "alice"))
		if len(live) != 3 || live["The user is vegetarian."].Sources[0].SessionID != two.ID || len(live["The user is vegetarian."].Sources) != 1 {
			t.Errorf("after purging the first session: %s %+v", contents(e.live(t, "alice")), live["The user is vegetarian."].Sources)
		}
		if old, _ := e.DB.(store).ListSuperseded(ctx, "alice"); len(old) != 0 {
			t.Errorf("a superseded fact learned only in the purged session stays: %+v", old)
		}
		v, _ := e.lt.Get(ctx, "alice")
		if v.Profile.Work.Text != "" {
			t.Errorf("a profile part learned in the purged session stays: %+v", v.Profile.Work)
		}
		if block, _, _ := e.lt.Block(ctx, "alice"); strings.Contains(block, "Bakes bread") || !strings.Contains(block, "cello") {
			t.Errorf("block after the purge: %q", block)
		}
		// A profile the user wrote has no session behind it and stays.
		work := "Runs a bakery."
		if _, err := e.lt.UpdateProfile(ctx, "alice", longterm.ProfilePatch{Work: &work}); err != nil {
			t.Fatal(err)
		}
		e.Purge(t, "alice", two)
		v, _ = e.lt.Get(ctx, "alice")
		if len(v.Facts) != 0 || v.Profile.Work.Text != work {
			t.Errorf("after purging both sessions: %+v", v)
		}
		// Purging a session nothing was learned from writes nothing.
		bob := e.NewSession(t, "bob")
		e.Purge(t, "bob", bob)
		if u, _ := e.DB.(store).GetUser(ctx, "bob"); u.Version != 0 {
			t.Errorf("forgetting nothing saved bob's memory (version %d)", u.Version)
		}
	})
}

// blocking is a model whose extraction waits until released.
type blocking struct {
	started, release chan struct{}
	answer           string
}

func (b *blocking) Complete(context.Context, string, string, string) (string, error) {
	close(b.started)
	<-b.release
	return b.answer, nil
}

// TestPurgeFencesExtraction: an extraction still running when its session
// is purged saves nothing, however late it ends.
func TestPurgeFencesExtraction(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.Sessions.Forget = e.lt.ForgetSessions
		s := e.NewSession(t, "alice")
		for i := 0; i < 6; i++ {
			e.Say(t, s, []history.Role{history.RoleUser, history.RoleAssistant}[i%2], fmt.Sprintf("I keep bees (%d)", i))
		}
		s = e.Reload(t, s)
		m := &blocking{started: make(chan struct{}), release: make(chan struct{}), answer: extraction(map[string]any{"work": "Beekeeper."}, fact{"The user keeps bees.", "personal", 0.9})}
		e.lt.Model = m
		done := make(chan error, 1)
		go func() { done <- e.lt.Learn(ctx, s, s.Model) }()
		<-m.started
		e.Purge(t, "alice", s)
		close(m.release)
		if err := <-done; !errors.Is(err, longterm.ErrSourceGone) {
			t.Errorf("the late extraction: %v, want ErrSourceGone", err)
		}
		v, err := e.lt.Get(ctx, "alice")
		if err != nil || len(v.Facts) != 0 || v.Profile.Work.Text != "" {
			t.Errorf("learned from a purged session: %+v %v", v, err)
		}
	})
}

// TestForgetSessionsAtOnce: forgetting several purged sessions of a user
// (as a sweep's page of purges does, once a user) removes what each taught
// in one save of the memory, and keeps what another session taught.
func TestForgetSessionsAtOnce(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		taught := []string{"The user bakes bread.", "The user plays the cello.", "The user lives in Oslo."}
		var sessions []string
		for i, f := range taught {
			s := e.NewSession(t, "alice")
			e.model.extract = func(string) string { return extraction(nil, fact{f, "personal", 0.9}) }
			e.converse(t, s, 6, fmt.Sprint("session ", i))
			sessions = append(sessions, s.ID)
		}
		if got := e.live(t, "alice"); len(got) != 3 {
			t.Fatalf("learned: %s", contents(got))
		}
		before, _ := e.DB.(store).GetUser(ctx, "alice")
		if err := e.lt.ForgetSessions(ctx, "alice", sessions[:2]); err != nil {
			t.Fatal(err)
		}
		if got := contents(e.live(t, "alice")); got != taught[2] {
			t.Errorf("after forgetting two of three sessions: %s", got)
		}
		if after, _ := e.DB.(store).GetUser(ctx, "alice"); after.Version != before.Version+1 {
			t.Errorf("forgetting two sessions saved the memory %d times, want once", after.Version-before.Version)
		}
		if err := e.lt.ForgetSessions(ctx, "alice", nil); err != nil {
			t.Errorf("forgetting no session: %v", err)
		}
	})
}

// listCounting counts the listings of superseded facts.
type listCounting struct {
	store
	listed int
}

func (c *listCounting) ListSuperseded(ctx context.Context, userID string) ([]longterm.Fact, error) {
	c.listed++
	return c.store.ListSuperseded(ctx, userID)
}

// TestForgetListsOnlyFiled: forgetting purged sessions lists a user's
// superseded facts only once some were filed (a query a user and page of
// purges, saved for every user who has none), and then forgets them too.
func TestForgetListsOnlyFiled(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		counted := &listCounting{store: e.DB.(store)}
		e.lt.Store = counted
		one := e.NewSession(t, "alice")
		e.model.extract = func(string) string { return extraction(nil, fact{"The user lives in Berlin.", "personal", 0.9}) }
		e.converse(t, one, 6, "first session")
		if u, _ := e.DB.(store).GetUser(ctx, "alice"); u.Version == 0 || u.Filed {
			t.Fatalf("a memory without superseded facts: version %d, filed %v", u.Version, u.Filed)
		}
		if err := e.lt.ForgetSessions(ctx, "alice", []string{"another"}); err != nil || counted.listed != 0 {
			t.Fatalf("forgetting listed superseded facts %d times (%v), with none filed", counted.listed, err)
		}
		berlin := e.live(t, "alice")[0]
		two := e.NewSession(t, "alice")
		e.model.extract = func(string) string { return extraction(nil, fact{"The user lives in Oslo now.", "personal", 0.9}) }
		e.model.resolve = func(string) string {
			return fmt.Sprintf(`{"decisions":[{"candidate":1,"decision":"contradicts","existing":%q}]}`, berlin.ID)
		}
		e.converse(t, two, 6, "second session")
		if u, _ := e.DB.(store).GetUser(ctx, "alice"); !u.Filed {
			t.Fatal("a memory with a superseded fact filed says it has none")
		}
		if old, _ := e.DB.(store).ListSuperseded(ctx, "alice"); len(old) != 1 {
			t.Fatalf("superseded facts: %+v", old)
		}
		if err := e.lt.ForgetSessions(ctx, "alice", []string{one.ID}); err != nil || counted.listed != 1 {
			t.Fatalf("forgetting listed superseded facts %d times (%v), want once", counted.listed, err)
		}
		if old, _ := e.DB.(store).ListSuperseded(ctx, "alice"); len(old) != 0 {
			t.Errorf("a superseded fact learned only in the forgotten session stays: %+v", old)
		}
	})
}
