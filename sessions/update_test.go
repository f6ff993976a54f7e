package sessions_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

func ptr[T any](v T) *T { return &v }

// TestUpdate: each change a user may make to a session, as stored; every
// refused one names what was wrong and leaves the session as it was.
func TestUpdate(t *testing.T) {
	cases := map[string]struct {
		user  string
		upd   sessions.Update
		code  errs.Code // "" for accepted
		want  string    // in the error, or checked on the session by check
		check func(*sessions.Session) bool
	}{
		"Title":            {upd: sessions.Update{Title: ptr("  Trip plans  ")}, check: func(s *sessions.Session) bool { return s.Title == "Trip plans" && s.TitleSource == sessions.TitleUser }},
		"Instructions":     {upd: sessions.Update{Instructions: ptr(" Answer in French. ")}, check: func(s *sessions.Session) bool { return s.Instructions == "Answer in French." }},
		"Model":            {upd: sessions.Update{Model: ptr("big")}, check: func(s *sessions.Session) bool { return s.Model == "big" }},
		"DefaultModel":     {upd: sessions.Update{Model: ptr("")}, check: func(s *sessions.Session) bool { return s.Model == "small" }},
		"NoLearning":       {upd: sessions.Update{NoLearning: ptr(true)}, check: func(s *sessions.Session) bool { return s.NoLearning }},
		"MessageRetention": {upd: sessions.Update{MessageRetentionDays: ptr(7)}, check: func(s *sessions.Session) bool { return s.MessageRetentionDays == 7 }},
		"Metadata":         {upd: sessions.Update{Metadata: &sessions.Metadata{Topic: "travel"}}, check: func(s *sessions.Session) bool { return s.Metadata.Topic == "travel" }},
		"Context": {upd: sessions.Update{Context: &sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 6000}},
			check: func(s *sessions.Session) bool {
				return s.Context.Strategy == sessions.StrategyTokenBuffer && s.Context.BudgetTokens == 6000
			}},
		"BudgetAndModelTogether": {upd: sessions.Update{Model: ptr("big"), Context: &sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 50_000}},
			check: func(s *sessions.Session) bool { return s.Model == "big" && s.Context.BudgetTokens == 50_000 }},

		"Nothing":             {upd: sessions.Update{}, code: errs.EINVALID, want: "nothing to update"},
		"EmptyTitle":          {upd: sessions.Update{Title: ptr("   ")}, code: errs.EINVALID, want: "title"},
		"UnknownModel":        {upd: sessions.Update{Model: ptr("huge")}, code: errs.EINVALID, want: "model"},
		"LongInstructions":    {upd: sessions.Update{Instructions: ptr(strings.Repeat("x", 101))}, code: errs.EINVALID, want: "instructions"},
		"NegativeRetention":   {upd: sessions.Update{MessageRetentionDays: ptr(-1)}, code: errs.EINVALID, want: "messageRetentionDays"},
		"UnknownStrategy":     {upd: sessions.Update{Context: &sessions.ContextSettings{Strategy: "forever"}}, code: errs.EINVALID, want: "strategy"},
		"BudgetOverWindow":    {upd: sessions.Update{Context: &sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 50_000}}, code: errs.EINVALID, want: "budget"},
		"ModelUnderBudget":    {upd: sessions.Update{Model: ptr("tiny")}, code: errs.EINVALID, want: "budget"},
		"AnotherUsersSession": {user: "bob", upd: sessions.Update{Title: ptr("Mine now")}, code: errs.ENOTFOUND},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			env := storetest.NewEnv(t, inprocdb.New())
			svc := env.Sessions
			svc.DefaultModel, svc.Models, svc.MaxInstructionsChars = "small", []string{"small", "big", "tiny"}, 100
			svc.ContextSize = func(model string) int { return map[string]int{"small": 16_000, "big": 128_000, "tiny": 4_000}[model] }
			s := storetest.Must[*sessions.Session](t)(svc.Create(ctx, "alice", sessions.CreateInput{
				Title: "Before", Context: sessions.ContextSettings{Strategy: sessions.StrategyTokenBuffer, BudgetTokens: 8000}}))
			user := c.user
			if user == "" {
				user = "alice"
			}
			got, err := svc.Update(ctx, user, s.ID, c.upd)
			stored := storetest.Must[*sessions.Session](t)(svc.Get(ctx, "alice", s.ID))
			if c.code != "" {
				storetest.WantCode(t, err, c.code)
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("the error %q does not name %q", err, c.want)
				}
				if stored.Title != "Before" || stored.Model != "small" || stored.Context.BudgetTokens != 8000 || !stored.UpdatedAt.Equal(s.UpdatedAt) {
					t.Errorf("a refused update changed the session: %+v", stored)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(got) || !c.check(stored) {
				t.Errorf("returned %+v, stored %+v", got, stored)
			}
		})
	}
}
