package sessions

import (
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
)

func TestDecodeStrict(t *testing.T) {
	cases := map[string]bool{ // body → accepted
		`{"title":"x"}`: true,
		`{"title":"x","metadata":{"tags":["a"]}}`: true,
		`{"title":"x","status":"active"}`:         false,
		`{"metadata":{"custom":{"k":"v"},"x":1}}`: false,
		`{"title":"x"} trailing`:                  false,
		`{"title":`:                               false,
		`{"title":5}`:                             false,
	}
	for body, ok := range cases {
		var u Update
		err := strictjson.Decode([]byte(body), &u) // as the HTTP layer decodes bodies
		if (err == nil) != ok {
			t.Errorf("%s: err = %v", body, err)
		}
		if err != nil && errs.CodeOf(err) != errs.EINVALID {
			t.Errorf("%s: code %s", body, errs.CodeOf(err))
		}
	}
}

// TestPolicyBoundaries: a session expires exactly at the policy's period.
func TestPolicyBoundaries(t *testing.T) {
	p := DefaultPolicy()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Session{Status: StatusActive, LastActivityAt: t0}
	if got := p.ExpiresAt(s); !got.Equal(t0.Add(30 * Day)) {
		t.Errorf("active: %v", got)
	}
	s.RetentionDays = 7
	if got := p.ExpiresAt(s); !got.Equal(t0.Add(7 * Day)) {
		t.Errorf("own retention: %v", got)
	}
	if err := s.Apply(ActionArchive, t0.Add(Day), p); err != nil {
		t.Fatal(err)
	}
	if !s.ExpiresAt.Equal(t0.Add(91 * Day)) {
		t.Errorf("archived: %v", s.ExpiresAt)
	}
	if err := s.Apply(ActionDelete, t0.Add(2*Day), p); err != nil {
		t.Fatal(err)
	}
	if !s.ExpiresAt.Equal(t0.Add(32*Day)) || s.ArchivedAt == nil {
		t.Errorf("deleted: %v", s.ExpiresAt)
	}
	s.Touch(t0.Add(3*Day), p) // activity does not revive a deleted session's clock
	if !s.ExpiresAt.Equal(t0.Add(32 * Day)) {
		t.Errorf("touch on deleted: %v", s.ExpiresAt)
	}
}

func TestLifecycleTable(t *testing.T) {
	want := map[Status]map[Action]Status{
		StatusActive:   {ActionArchive: StatusArchived, ActionDelete: StatusDeleted},
		StatusArchived: {ActionRestore: StatusActive, ActionDelete: StatusDeleted},
		StatusDeleted:  {ActionRestore: StatusActive, ActionPurge: StatusPurged},
	}
	for _, from := range []Status{StatusActive, StatusArchived, StatusDeleted, StatusPurged} {
		for _, a := range []Action{ActionArchive, ActionRestore, ActionDelete, ActionPurge} {
			to, err := Next(from, a)
			exp, ok := want[from][a]
			if ok != (err == nil) || to != exp {
				t.Errorf("%s --%s--> %q, %v; want %q", from, a, to, err, exp)
			}
			if err != nil && errs.CodeOf(err) != errs.EPRECONDITION {
				t.Errorf("%s/%s: code %s", from, a, errs.CodeOf(err))
			}
		}
	}
}

// TestDecodeMessages: one message per problem, naming the field's path
// once, however deeply it is nested, and never echoing the caller's data.
func TestDecodeMessages(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"memory":{"strategy":"window","bogus":1}}`, "memory.bogus: unknown field"},
		{`{"metadata":{"custom":{"a":1}}}`, "metadata.custom.a: must be a string"},
		{`{"memory":{"budgetTokens":"many"}}`, "memory.budgetTokens: must be a whole number"},
		{`{"memory":{"budgetTokens":1e99}}`, "memory.budgetTokens: must be a whole number"},
		{`{"memory":{"budgetTokens":92233720368547758070}}`, "memory.budgetTokens: must be a whole number in range"},
		{`{"metadata":{"tags":["ok",7]}}`, "metadata.tags[1]: must be a string"},
		{`{"metadata":[]}`, "metadata: must be an object"},
		{`{"noLearning":"yes"}`, "noLearning: must be true or false"},
		{`[1]`, "the body must be an object"},
		{`{"title":"secret-canary"`, "malformed JSON: syntax error"},
		{`{"title":"x"} {}`, "malformed JSON: trailing data after the object"},
	}
	for _, c := range cases {
		var in CreateInput
		err := strictjson.Decode([]byte(c.body), &in)
		if got := errs.Message(err); got != c.want || errs.CodeOf(err) != errs.EINVALID {
			t.Errorf("%s: %q (%s), want %q", c.body, got, errs.CodeOf(err), c.want)
		}
	}
}

func TestReservedCustomKeys(t *testing.T) {
	for key, ok := range map[string]bool{"__name__": false, "__x__": false, "____": false, "__a": true, "a__": true, "_x_": true, "__": true} {
		err := Metadata{Custom: map[string]string{key: "v"}}.Validate()
		if (err == nil) != ok {
			t.Errorf("custom key %q: %v", key, err)
		}
	}
}

func TestBudgetBounds(t *testing.T) {
	svc := &Service{Store: nil, DefaultModel: "m", ContextSize: func(string) int { return 8192 }}
	for budget, ok := range map[int]bool{0: true, 256: true, 8192: true, 255: false, 8193: false, -1: false, 1<<63 - 1: false} {
		err := svc.checkContext(ContextSettings{BudgetTokens: budget}, "m")
		if (err == nil) != ok {
			t.Errorf("budget %d: %v", budget, err)
		}
		if err != nil && !strings.Contains(errs.Message(err), "memory.budgetTokens must be between 256 and 8192") {
			t.Errorf("budget %d: message %q does not name the field and range", budget, errs.Message(err))
		}
	}
}
