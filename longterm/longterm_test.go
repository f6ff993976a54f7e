package longterm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

type store = storetest.Backend

var backends = storetest.Both

// scripted answers extraction and resolution requests from the test.
type scripted struct {
	mu          sync.Mutex
	extract     func(user string) string
	resolve     func(user string) string
	extractions int
	resolutions int
	down        bool // every call fails, as when the model does not answer
}

func (m *scripted) Complete(_ context.Context, _, system, user string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return "", errors.New("model unavailable")
	}
	if system == prompts.Resolve {
		m.resolutions++
		return m.resolve(user), nil
	}
	m.extractions++
	return m.extract(user), nil
}

type fact struct {
	Content    string  `json:"content"`
	Category   string  `json:"category"`
	Confidence float64 `json:"confidence"`
}

func extraction(profile map[string]any, facts ...fact) string {
	b, _ := json.Marshal(map[string]any{"profile": profile, "facts": facts})
	return string(b)
}

type env struct {
	*storetest.Env
	lt    *longterm.Service
	model *scripted
}

func newEnv(t *testing.T, db store) *env {
	e := storetest.NewEnv(t, db)
	m := &scripted{extract: func(string) string { return extraction(nil) }, resolve: func(string) string { return `{"decisions":[]}` }}
	lt := &longterm.Service{Store: db, Sessions: db, Messages: db, Model: m, Tokens: e.Tokens,
		Settings: longterm.DefaultSettings(), Now: e.Clock.Now}
	return &env{Env: e, lt: lt, model: m}
}

// converse adds k messages to s and lets memory learn; it returns the session.
func (e *env) converse(t *testing.T, s *sessions.Session, k int, text string) *sessions.Session {
	t.Helper()
	for i := 0; i < k; i++ {
		e.Say(t, s, []history.Role{history.RoleUser, history.RoleAssistant}[i%2], fmt.Sprintf("%s (%d)", text, i))
	}
	s = e.Reload(t, s)
	if err := e.lt.Learn(context.Background(), s, s.Model); err != nil && errs.CodeOf(err) != errs.EPRECONDITION {
		t.Fatalf("learn: %v", err)
	}
	return e.Reload(t, s)
}

func (e *env) live(t *testing.T, user string) []longterm.FactView {
	t.Helper()
	v, err := e.lt.Get(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return v.Facts
}

func contents(fs []longterm.FactView) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Content)
	}
	return strings.Join(out, " | ")
}

func forBoth(t *testing.T, f func(t *testing.T, e *env)) {
	storetest.EachBackend(t, backends, func(t *testing.T, open func(*testing.T) store) {
		f(t, newEnv(t, open(t)))
	})
}

func TestThresholdAndProfile(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		e.model.extract = func(string) string {
			return extraction(map[string]any{"work": "Backend engineer at a travel startup.", "focus": nil},
				fact{"The user writes Go at work.", "technical", 0.95},
				fact{"The user might like jazz.", "preference", 0.5},
				fact{"The user is planning a trip to Oslo.", "project", 0.7})
		}
		s := e.NewSession(t, "alice")
		e.converse(t, s, 6, "I write Go at work and I'm planning a trip to Oslo")
		if got := contents(e.live(t, "alice")); !strings.Contains(got, "writes Go") || !strings.Contains(got, "Oslo") || strings.Contains(got, "jazz") {
			t.Errorf("facts: %s", got)
		}
		v, _ := e.lt.Get(context.Background(), "alice")
		if v.Profile.Work.Text != "Backend engineer at a travel startup." || v.Profile.Focus.Text != "" || v.Profile.Work.UpdatedAt == nil {
			t.Errorf("profile: %+v", v.Profile)
		}
		block, n, _ := e.lt.Block(context.Background(), "alice")
		if !strings.HasPrefix(block, prompts.MemoryHeader) || !strings.Contains(block, "Work: Backend engineer") || n == 0 {
			t.Errorf("block %q (%d tokens)", block, n)
		}
		if strings.Index(block, "Work:") > strings.Index(block, "writes Go") {
			t.Errorf("the profile must come before the facts: %q", block)
		}
	})
}

func TestBatchingAndOptOut(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		e.model.extract = func(string) string { return extraction(nil, fact{"The user likes tea.", "preference", 0.9}) }
		s := e.NewSession(t, "alice")
		// Fewer than K new messages: no extraction.
		s = e.converse(t, s, 5, "hello")
		if e.model.extractions != 0 {
			t.Fatalf("%d extractions after 5 messages", e.model.extractions)
		}
		// 25 more messages, learning attempted after each: one call per 6.
		for i := 0; i < 25; i++ {
			s = e.converse(t, s, 1, "more")
		}
		if e.model.extractions != 5 || s.Bookkeeping.LearnFrom != 30 {
			t.Errorf("%d extractions for 30 messages (watermark %d), want 5", e.model.extractions, s.Bookkeeping.LearnFrom)
		}
		// Two instances with the same batch: one extraction.
		s = e.converse(t, s, 0, "")
		for i := 0; i < 6; i++ {
			e.Say(t, s, history.RoleUser, "racing")
		}
		s = e.Reload(t, s)
		before := e.model.extractions
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); e.lt.Learn(context.Background(), s, s.Model) }()
		}
		wg.Wait()
		if e.model.extractions-before != 1 {
			t.Errorf("%d extractions for one batch picked up four times", e.model.extractions-before)
		}

		// A no-learning session and an opted-out user teach nothing.
		quiet := storetest.Must[*sessions.Session](t)(e.Sessions.Create(context.Background(), "alice", sessions.CreateInput{NoLearning: true}))
		before = e.model.extractions
		e.converse(t, quiet, 12, "I secretly love opera")
		bob := e.NewSession(t, "bob")
		if err := e.lt.SetEnabled(context.Background(), "bob", false); err != nil {
			t.Fatal(err)
		}
		e.converse(t, bob, 12, "I am bob")
		if e.model.extractions != before || len(e.live(t, "bob")) != 0 {
			t.Errorf("learned from a no-learning session or an opted-out user: %d calls", e.model.extractions-before)
		}
		if block, _, _ := e.lt.Block(context.Background(), "bob"); block != "" {
			t.Errorf("an opted-out user's block: %q", block)
		}
		// Turning memory back on learns only from what comes after.
		e.lt.SetEnabled(context.Background(), "bob", true)
		bob = e.converse(t, e.Reload(t, bob), 6, "now you may remember")
		if e.model.extractions != before+1 || bob.Bookkeeping.LearnFrom != 18 {
			t.Errorf("after opting in again: %d calls, watermark %d", e.model.extractions-before, bob.Bookkeeping.LearnFrom)
		}
	})
}

func TestDedupAndContradiction(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.NewSession(t, "alice")
		e.model.extract = func(string) string {
			return extraction(nil, fact{"The user prefers Python for scripting tasks.", "preference", 0.8}, fact{"The user lives in Berlin.", "personal", 0.9})
		}
		s = e.converse(t, s, 6, "first")
		first := e.live(t, "alice")
		if len(first) != 2 {
			t.Fatalf("facts: %s", contents(first))
		}
		var py, berlin string
		for _, f := range first {
			if strings.Contains(f.Content, "Python") {
				py = f.ID
			} else {
				berlin = f.ID
			}
		}
		e.Clock.Advance(3 * 24 * time.Hour)
		e.model.extract = func(string) string {
			return extraction(nil, fact{"The user prefers Python for scripting.", "preference", 0.95}, fact{"The user lives in Oslo now.", "personal", 0.9})
		}
		e.model.resolve = func(user string) string {
			if !strings.Contains(user, "existing "+py) || !strings.Contains(user, "existing "+berlin) {
				t.Errorf("resolution request lacks the similar facts:\n%s", user)
			}
			return fmt.Sprintf(`{"decisions":[{"candidate":1,"decision":"same","existing":%q},{"candidate":2,"decision":"contradicts","existing":%q}]}`, py, berlin)
		}
		s = e.converse(t, s, 6, "second")
		live := e.live(t, "alice")
		if got := contents(live); len(live) != 2 || !strings.Contains(got, "Python for scripting tasks") || !strings.Contains(got, "Oslo") || strings.Contains(got, "Berlin") {
			t.Fatalf("live facts: %s", got)
		}
		for _, f := range live {
			if f.ID == py && (f.Confidence != 0.95 || !f.LastConfirmedAt.Equal(e.Clock.Now())) {
				t.Errorf("refreshed fact: %+v", f)
			}
		}
		all, _ := e.DB.(store).ListSuperseded(ctx, "alice")
		if len(all) != 1 || all[0].ID != berlin || all[0].InvalidAt == nil || all[0].SupersededBy == "" || all[0].Live() {
			t.Errorf("superseded fact kept for audit: %+v", all)
		}
		if block, _, _ := e.lt.Block(ctx, "alice"); strings.Contains(block, "Berlin") || !strings.Contains(block, "Oslo") {
			t.Errorf("block shows a superseded fact: %q", block)
		}
		// Export keeps the audit trail; forgetting removes a fact for good.
		ex, _ := e.lt.ExportUser(ctx, "alice")
		if b, _ := json.Marshal(ex); !strings.Contains(string(b), "Berlin") {
			t.Errorf("export lacks the superseded fact")
		}
		if err := e.lt.Forget(ctx, "alice", py); err != nil {
			t.Fatal(err)
		}
		if err := e.lt.Forget(ctx, "bob", berlin); errs.CodeOf(err) != errs.ENOTFOUND {
			t.Errorf("forgetting another user's fact: %v", err)
		}
		if block, _, _ := e.lt.Block(ctx, "alice"); strings.Contains(block, "Python") {
			t.Errorf("forgotten fact still in the block")
		}
		if err := e.lt.ForgetAll(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if all, _ := e.DB.(store).ListSuperseded(ctx, "alice"); len(all) != 0 || len(e.live(t, "alice")) != 0 {
			t.Errorf("%d superseded facts after forgetting everything", len(all))
		}
	})
}

func TestMalformedOutputChangesNothing(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		s := e.NewSession(t, "alice")
		e.model.extract = func(string) string {
			return extraction(map[string]any{"work": "Pilot."}, fact{"The user flies planes.", "personal", 0.9})
		}
		s = e.converse(t, s, 6, "I am a pilot")
		before, _ := e.lt.Get(context.Background(), "alice")
		for _, bad := range []string{
			"I think the user likes trains",
			`{"facts":[{"content":"x","category":"colour","confidence":0.9}]}`,
			`{"facts":[{"content":"The user likes trains.","category":"preference","confidence":1.5}]}`,
			`{"facts":[{"content":"","category":"preference","confidence":0.9}]}`,
			`{"facts":[],"mood":"happy"}`,
			`{"profile":{"work":"Train driver."},"facts":[{"content":"The user drives trains.","category":"personal","confidence":0.9}]} trailing`,
		} {
			e.model.extract = func(string) string { return bad }
			s = e.converse(t, s, 6, "anything")
			after, _ := e.lt.Get(context.Background(), "alice")
			if b1, b2 := fmt.Sprint(before), fmt.Sprint(after); b1 != b2 {
				t.Errorf("output %q changed memory:\n%s\n%s", bad, b1, b2)
			}
		}
		// A resolution the model gets wrong drops the near-duplicates rather than double them.
		e.model.extract = func(string) string {
			return extraction(nil, fact{"The user flies planes for a living.", "personal", 0.9})
		}
		e.model.resolve = func(string) string { return `{"decisions":[{"candidate":7,"decision":"same","existing":"nope"}]}` }
		e.converse(t, s, 6, "again")
		if got := e.live(t, "alice"); len(got) != 1 {
			t.Errorf("facts after a malformed resolution: %s", contents(got))
		}
	})
}

// TestFailedExtractionIsRetried: a batch whose extraction failed because
// the model did not answer is given back, and the next turn learns from it.
func TestFailedExtractionIsRetried(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		var seen []string
		e.model.extract = func(user string) string {
			seen = append(seen, user)
			return extraction(nil, fact{"The user keeps bees.", "personal", 0.9})
		}
		s := e.NewSession(t, "alice")
		for i := 0; i < 6; i++ {
			e.Say(t, s, []history.Role{history.RoleUser, history.RoleAssistant}[i%2], fmt.Sprintf("I keep bees (%d)", i))
		}
		s = e.Reload(t, s)
		e.model.down = true
		if err := e.lt.Learn(context.Background(), s, s.Model); err == nil {
			t.Fatal("an extraction without a model succeeded")
		}
		if s = e.Reload(t, s); s.Bookkeeping.LearnFrom != 0 {
			t.Fatalf("after a failed extraction the watermark is %d, want 0", s.Bookkeeping.LearnFrom)
		}
		e.model.down = false
		s = e.converse(t, s, 2, "and honey")
		if s.Bookkeeping.LearnFrom != 8 || len(seen) != 1 || !strings.Contains(seen[0], "I keep bees (0)") || !strings.Contains(seen[0], "and honey (1)") {
			t.Fatalf("watermark %d after %d extractions: %q", s.Bookkeeping.LearnFrom, len(seen), seen)
		}
		if got := contents(e.live(t, "alice")); got != "The user keeps bees." {
			t.Errorf("facts: %s", got)
		}
		// Output the model got wrong is not retried: the batch is done.
		e.model.extract = func(string) string { return "not JSON" }
		s = e.converse(t, s, 6, "more")
		if s.Bookkeeping.LearnFrom != 14 {
			t.Errorf("after malformed output the watermark is %d, want 14", s.Bookkeeping.LearnFrom)
		}
	})
}

// TestCapAndDecay: over the cap, the fact of lowest effective confidence
// goes, where confidence decays with the weeks since it was confirmed.
func TestCapAndDecay(t *testing.T) {
	forBoth(t, func(t *testing.T, e *env) {
		e.lt.Settings.MaxFacts = 3
		s := e.NewSession(t, "alice")
		add := func(content string, conf float64) {
			e.model.extract = func(string) string { return extraction(nil, fact{content, "personal", conf}) }
			s = e.converse(t, s, 6, content)
		}
		add("The user owns a red bicycle.", 0.95) // confirmed 30 weeks before the end: 0.95-0.30 = 0.65
		e.Clock.Advance(20 * 7 * 24 * time.Hour)
		add("The user speaks Norwegian fluently.", 0.8) // 10 weeks: 0.70
		e.Clock.Advance(10 * 7 * 24 * time.Hour)
		add("The user keeps bees.", 0.75)      // 0.75
		add("The user plays the cello.", 0.72) // 0.72: the fourth live fact, over the cap
		got := contents(e.live(t, "alice"))
		if strings.Contains(got, "bicycle") || len(e.live(t, "alice")) != 3 {
			t.Errorf("after eviction: %s", got)
		}
		// Ordered by effective confidence: bees, cello, Norwegian.
		if got != "The user keeps bees. | The user plays the cello. | The user speaks Norwegian fluently." {
			t.Errorf("order: %s", got)
		}
		block, _, _ := e.lt.Block(context.Background(), "alice")
		if i, j := strings.Index(block, "bees"), strings.Index(block, "Norwegian"); i < 0 || j < i {
			t.Errorf("block order: %q", block)
		}
	})
}

// TestBlockCap: whatever the facts, the block never exceeds its cap in
// either encoding, and lists facts by effective confidence.
func TestBlockCap(t *testing.T) {
	tok := storetest.Tokens(t)
	r := rand.New(rand.NewPCG(5, 6))
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	st := longterm.DefaultSettings()
	for i := 0; i < 300; i++ {
		st.BlockTokens = 20 + r.IntN(400)
		var facts []longterm.Fact
		for j := 0; j < r.IntN(60); j++ {
			facts = append(facts, longterm.Fact{ID: fmt.Sprint("f", j), Content: fmt.Sprintf("The user fact number %d says %s.", j, strings.Repeat("word ", r.IntN(20))),
				Confidence: 0.7 + r.Float64()*0.3, LastConfirmedAt: now.Add(-time.Duration(r.IntN(5000)) * time.Hour)})
		}
		u := &longterm.User{Profile: longterm.Profile{Work: longterm.ProfileField{Text: "Engineer."}}}
		block, n := longterm.BuildBlock(u, facts, now, st, tok)
		for _, model := range []string{"gpt-4o", "gpt-4"} {
			if c := tok.Text(model, block); c > st.BlockTokens || (block != "" && c > n) {
				t.Fatalf("block of %d tokens (%s) over the cap %d or the stored count %d", c, model, st.BlockTokens, n)
			}
		}
		last := 2.0
		for _, line := range strings.Split(block, "\n")[1:] {
			for _, f := range facts {
				if "- "+f.Content == line {
					if eff := f.Effective(now, st.DecayPerWeek); eff > last+1e-9 {
						t.Fatalf("block out of order at %q", line)
					} else {
						last = eff
					}
				}
			}
		}
	}
}

func TestSimilarity(t *testing.T) {
	for _, c := range []struct {
		a, b string
		min  float64
		max  float64
	}{
		{"The user lives in Berlin.", "The user lives in Oslo now.", 0.5, 0.5},
		{"The user prefers Python for scripting tasks.", "The user prefers Python for scripting.", 1, 1},
		{"The user keeps bees.", "The user plays the cello.", 0, 0},
		{"", "anything", 0, 0},
	} {
		if got := longterm.Similarity(c.a, c.b); got < c.min || got > c.max {
			t.Errorf("Similarity(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
