package systemtest_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
)

type foundResp struct {
	Results []struct {
		SessionID string   `json:"sessionId"`
		MessageID string   `json:"messageId"`
		Role      string   `json:"role"`
		Exact     bool     `json:"exact"`
		Matched   []string `json:"matched"`
		Snippet   string   `json:"snippet"`
	} `json:"results"`
}

// TestSearchFindsWhatWasSaid: a word said once is found among many
// exchanges that share the query's other words; a query that shares no
// word and no meaning with anything finds nothing; a quoted phrase is
// matched as a phrase; each result says why it matched; every message
// with text is searchable, those appended without a partner too (an
// opening reply, a question left unanswered, a reply appended apart), and
// the append says how many; an edited-away question is not found, its
// new version is. Both stores.
func TestSearchFindsWhatWasSaid(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
		alice := h.signUp()
		find := func(q string) foundResp {
			t.Helper()
			var r foundResp
			h.do("GET", "/search?"+url.Values{"q": {q}, "limit": {"5"}}.Encode(), alice.token, nil).want(t, 200).decode(t, &r)
			return r
		}
		cakes := h.newSession(alice.token, map[string]any{"title": "cakes"})
		var pairs []map[string]any
		for i := range 30 {
			pairs = append(pairs, map[string]any{"role": "user", "content": fmt.Sprintf("Which cake should I bake for party number %d?", i)},
				map[string]any{"role": "assistant", "content": fmt.Sprintf("For party %d a chocolate cake works well.", i)})
		}
		pairs[41]["content"] = "Try the LayerCake recipe from the bakery on Elm street."
		for from := 0; from < len(pairs); from += 20 {
			var appended struct {
				Searchable int `json:"searchable"`
			}
			h.do("POST", "/sessions/"+cakes+"/messages", alice.token, map[string]any{"messages": pairs[from : from+20]}).want(t, 201).decode(t, &appended)
			if appended.Searchable != 20 {
				t.Errorf("the append says %d searchable, want 20", appended.Searchable)
			}
		}
		h.idle()
		if r := find("which cake recipe for the party, LayerCake?"); len(r.Results) == 0 || r.Results[0].Role != "assistant" ||
			!slices.Contains(r.Results[0].Matched, "words") {
			t.Fatalf("a word said once: %+v", r.Results)
		}
		if r := find("LayerCake"); len(r.Results) == 0 || !r.Results[0].Exact || !strings.Contains(r.Results[0].Snippet, "LayerCake") {
			t.Fatalf("the rare word alone: %+v", r.Results)
		}
		if r := find("zzqqxx"); len(r.Results) != 0 {
			t.Fatalf("nonsense found %+v", r.Results)
		}
		if r := find(`"chocolate cake works"`); len(r.Results) != 5 || !r.Results[0].Exact {
			t.Fatalf("a quoted phrase: %+v", r.Results)
		}
		if r := find(`"cake chocolate"`); len(r.Results) != 0 {
			t.Fatalf("a quoted phrase in another order: %+v", r.Results)
		}

		// Messages without a partner.
		lone := h.newSession(alice.token, map[string]any{"title": "lone"})
		h.do("POST", "/sessions/"+lone+"/messages", alice.token, map[string]any{"messages": []map[string]any{
			{"role": "assistant", "content": "Welcome aboard the Hurtigruten concierge."}}}).want(t, 201)
		h.do("POST", "/sessions/"+lone+"/messages", alice.token, map[string]any{"messages": []map[string]any{
			{"role": "user", "content": "Is the Trollfjord visible in winter?"}}}).want(t, 201)
		h.do("POST", "/sessions/"+lone+"/messages", alice.token, map[string]any{"messages": []map[string]any{
			{"role": "assistant", "content": "Only from the Kirkenes leg, weather allowing."}}}).want(t, 201)
		h.idle()
		for q, role := range map[string]string{"Hurtigruten concierge": "assistant", "Trollfjord": "user", "Kirkenes": "assistant"} {
			if r := find(q); len(r.Results) == 0 || r.Results[0].SessionID != lone || r.Results[0].Role != role {
				t.Errorf("%q: %+v", q, r.Results)
			}
		}

		// An edited-away question: only the active branch is found.
		boat := h.newSession(alice.token, map[string]any{"title": "boat"})
		first := h.turn(alice.token, map[string]any{"sessionId": boat, "message": "Our mooring code is Quokka7."})
		h.turn(alice.token, map[string]any{"sessionId": boat, "edit": first.UserMessage.ID, "message": "Our mooring code is Wombat9."})
		h.idle()
		if r := find("Quokka7"); len(r.Results) != 0 {
			t.Errorf("an edited-away question was found: %+v", r.Results)
		}
		if r := find("Wombat9"); len(r.Results) == 0 || r.Results[0].SessionID != boat {
			t.Errorf("the edit was not found: %+v", r.Results)
		}
	})
}
