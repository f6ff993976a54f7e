package systemtest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
)

// TestFactsByRelevance: when a user's facts overflow the memory block's
// cap, a turn's block holds the facts relevant to its message, even one
// the block by confidence leaves out; the export says which embeddings
// are held (facts and exchanges) without shipping them.
func TestFactsByRelevance(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.LongTermMemory = true; c.Embeddings = true })
		word := func(n int) string { // letters only (the test server's embedding splits words at anything else), scattered
			x, b := uint64(n)*0x9E3779B97F4A7C15+12345, []byte{'q'}
			for range 6 {
				b = append(b, byte('a'+x%26))
				x = x/26 ^ x<<7
			}
			return string(b)
		}
		fact := func(i int) string { // words no other fact shares
			var w []string
			for j := range 8 {
				w = append(w, word(i*8+j))
			}
			return "Noted: " + strings.Join(w, " ") + "."
		}
		h.model.SetReply(func(r openai.ChatCompletionRequest) llmtest.Response {
			switch r.Messages[0].Content {
			case prompts.Extract:
				var facts []string
				for i := range 100 {
					facts = append(facts, fmt.Sprintf(`{"content":%q,"category":"technical","confidence":%.4f}`, fact(i), 0.99-float64(i)*0.0029))
				}
				return llmtest.Response{Content: `{"profile":null,"facts":[` + strings.Join(facts, ",") + `]}`}
			case prompts.Resolve:
				return llmtest.Response{Content: `{"decisions":[]}`}
			}
			return llmtest.Echo(r)
		})
		alice := h.signUp()
		var c chatResp
		h.do("POST", "/chat", alice.token, map[string]any{"message": "hello"}).want(t, 200).decode(t, &c)
		for i := range 2 {
			h.do("POST", "/chat", alice.token, map[string]any{"sessionId": c.SessionID, "message": fmt.Sprint("more ", i)}).want(t, 200)
		}
		h.idle()
		var mem struct {
			Facts       []struct{ Content string }
			BlockTokens int
		}
		h.do("GET", "/memory", alice.token, nil).want(t, 200).decode(t, &mem)
		if len(mem.Facts) != 100 || mem.BlockTokens > 2000 || mem.BlockTokens < 1500 {
			t.Fatalf("memory: %d facts, a block of %d tokens", len(mem.Facts), mem.BlockTokens)
		}
		h.do("POST", "/chat", alice.token, map[string]any{"message": "plain question"}).want(t, 200)
		if sys := h.systemOf("plain question"); strings.Contains(sys, fact(99)) || !strings.Contains(sys, fact(0)) {
			t.Fatalf("the block by confidence should hold the first fact and not the last")
		}
		h.do("POST", "/chat", alice.token, map[string]any{"message": word(99*8+3) + " " + word(99*8+5) + "?"}).want(t, 200)
		sys := h.systemOf(word(99*8+3) + " " + word(99*8+5) + "?")
		// The block stays as stored, at the top; the fact relevant to the
		// message comes after the history, just before the message.
		if !strings.Contains(sys, fact(99)) || !strings.HasPrefix(sys, "You are") || !strings.Contains(sys, prompts.MemoryRelevant+"\n- "+fact(99)) {
			t.Fatalf("the block for a message about the last fact: %.300s", sys)
		}
		reqs := h.model.Requests()
		for _, r := range reqs {
			if msgs := r.Messages; msgs[len(msgs)-1].Content == word(99*8+3)+" "+word(99*8+5)+"?" {
				if next := msgs[len(msgs)-2]; next.Role != "system" || !strings.HasPrefix(next.Content, prompts.MemoryRelevant) || strings.Contains(msgs[1].Content, fact(99)) {
					t.Fatalf("the relevant facts are not next to the message: %.200s", next.Content)
				}
			}
		}
		h.idle() // the last exchange is embedded after its reply
		var export map[string]json.RawMessage
		h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &export)
		if m := string(export["memory"]); !strings.Contains(m, `"embeddings"`) || !strings.Contains(m, `"facts":100`) {
			t.Errorf("export memory: %.300s", m)
		}
		if r := string(export["recall"]); !strings.Contains(r, `"exchanges":5`) || strings.Contains(r, "vector\":[") {
			t.Errorf("export recall: %s", r)
		}
	})
}
