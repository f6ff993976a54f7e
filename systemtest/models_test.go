package systemtest_test

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/functions"
)

// TestSessionModels: GET /models (and the callable) lists the models the
// operator offers, the default first; a session chooses one at creation or
// with PATCH, its turns are sent to it and its budget is bounded by its
// context size; any other model is 400 naming the offered ones. Both stores.
func TestSessionModels(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) {
			c.ChatModels = []functions.ChatModel{{Name: "gpt-4o-mini", ContextSize: 128_000}, {Name: "small-model", ContextSize: 8_000}}
		})
		alice := h.signUp()
		var models struct {
			Default string
			Models  []functions.ChatModel
		}
		h.do("GET", "/models", alice.token, nil).want(t, 200).decode(t, &models)
		if models.Default != "gpt-4o-mini" || len(models.Models) != 2 || models.Models[1] != (functions.ChatModel{Name: "small-model", ContextSize: 8_000}) {
			t.Fatalf("models: %+v", models)
		}
		var viaCallable struct{ Result struct{ Default string } }
		h.do("POST", "/callable/listModels", alice.token, map[string]any{"data": map[string]any{}}).want(t, 200).decode(t, &viaCallable)
		if viaCallable.Result.Default != "gpt-4o-mini" {
			t.Errorf("callable: %+v", viaCallable)
		}
		var s struct{ ID, Model string }
		h.do("POST", "/sessions", alice.token, map[string]any{"model": "small-model"}).want(t, 201).decode(t, &s)
		if s.Model != "small-model" {
			t.Fatalf("created with model %q", s.Model)
		}
		h.turn(alice.token, map[string]any{"sessionId": s.ID, "message": "which model?"})
		if reqs := h.model.Requests(); reqs[len(reqs)-1].Model != "small-model" && reqs[0].Model != "small-model" {
			t.Errorf("the turn was sent to %q", reqs[len(reqs)-1].Model)
		}
		for name, body := range map[string]map[string]any{
			"an unknown model":               {"model": "gpt-9"},
			"a budget over its context size": {"model": "small-model", "memory": map[string]any{"budgetTokens": 20_000}},
		} {
			r := h.do("POST", "/sessions", alice.token, body)
			if r.status != 400 || (name == "an unknown model" && !strings.Contains(string(r.body), "small-model")) {
				t.Errorf("%s: %d %s", name, r.status, r.body)
			}
		}
		h.do("PATCH", "/sessions/"+s.ID, alice.token, map[string]any{"model": "gpt-4o-mini"}).want(t, 200).decode(t, &s)
		if s.Model != "gpt-4o-mini" {
			t.Errorf("after PATCH: %q", s.Model)
		}
		h.turn(alice.token, map[string]any{"sessionId": s.ID, "message": "and now?"})
		h.idle()
		// Today's replies' tokens, by the model that answered them.
		var u struct {
			Tokens             gauge
			ReplyTokensByModel map[string]int
		}
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &u)
		small, mini := u.ReplyTokensByModel["small-model"], u.ReplyTokensByModel["gpt-4o-mini"]
		if small == 0 || mini == 0 || small+mini > u.Tokens.Used {
			t.Errorf("usage by model %v, of %d tokens", u.ReplyTokensByModel, u.Tokens.Used)
		}
		if r := h.do("PATCH", "/sessions/"+s.ID, alice.token, map[string]any{"model": "nope"}); r.status != 400 || !strings.Contains(string(r.body), "model") {
			t.Errorf("PATCH to an unknown model: %d %s", r.status, r.body)
		}
	})
}
