package systemtest_test

import (
	"net/url"
	"testing"

	"github.com/chatmemory/backend/app"
)

// TestSearchFindsToolResults: what an app's tool returned is searchable
// once the turn that answered with it is done: the result holding the
// query is shown (role tool, exact), with its session. Both stores.
func TestSearchFindsToolResults(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
		h.model.SetReply(ordersModel)
		alice := h.signUp()
		var asked toolTurn
		h.do("POST", "/chat", alice.token, map[string]any{"message": "first where is order 42", "tools": []any{lookupOrder}}).want(t, 200).decode(t, &asked)
		if len(asked.ToolCalls) != 1 {
			t.Fatalf("the first turn: %+v", asked)
		}
		h.do("POST", "/chat", alice.token, map[string]any{"sessionId": asked.SessionID, "tools": []any{lookupOrder},
			"toolResults": []any{map[string]any{"toolCallId": asked.ToolCalls[0].ID, "content": "shipped with tracking code QX7781ZB"}}}).want(t, 200)
		h.idle()
		var r foundResp
		h.do("GET", "/search?"+url.Values{"q": {"QX7781ZB"}}.Encode(), alice.token, nil).want(t, 200).decode(t, &r)
		if len(r.Results) == 0 || r.Results[0].Role != "tool" || !r.Results[0].Exact || r.Results[0].SessionID != asked.SessionID {
			t.Fatalf("search for the tool's tracking code: %+v", r.Results)
		}
	})
}
