package systemtest_test

import (
	"net/url"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/attachments/attachmentstest"
	"github.com/chatmemory/backend/llm/llmtest"
)

// TestSearchFindsAttachments: a document's text, an image's file name and
// its alt text are found as part of the message holding them (by their
// words: none of them is in the message's own text, nor in the reply);
// another user's search finds none of it. Both stores.
func TestSearchFindsAttachments(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend, func(c *app.Config) { c.Embeddings = true })
		alice, bob := h.signUp(), h.signUp()
		h.model.SetReply(func(openai.ChatCompletionRequest) llmtest.Response { return llmtest.Response{Content: "Noted."} })
		var img, doc attachments.Attachment
		h.upload(alice.token, "zanzibar-harbour.png", "", testPNG(8, 8), "a tabby kitten asleep").want(t, 201).decode(t, &img)
		h.upload(alice.token, "minutes.pdf", "", attachmentstest.PDF("The quorum approved the marmalade budget"), "").want(t, 201).decode(t, &doc)
		other := h.turn(alice.token, map[string]any{"message": "Something else entirely"}).SessionID
		sid := h.turn(alice.token, map[string]any{"message": "Keep these", "attachments": []string{img.ID, doc.ID}}).SessionID
		h.idle()
		for _, q := range []string{"marmalade", "quorum budget", "zanzibar", "harbour", "tabby kitten"} {
			var r searchResp
			h.do("GET", "/search?"+url.Values{"q": {q}}.Encode(), alice.token, nil).want(t, 200).decode(t, &r)
			if len(r.Results) == 0 || r.Results[0].SessionID != sid || r.Results[0].SessionID == other {
				t.Errorf("%q found %+v, want the message holding the files first", q, r.Results)
			}
			h.do("GET", "/search?"+url.Values{"q": {q}}.Encode(), bob.token, nil).want(t, 200).decode(t, &r)
			if len(r.Results) != 0 {
				t.Errorf("bob's search for %q found %+v", q, r.Results)
			}
		}
	})
}
