package llm

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
)

// TestWithParts: a user message's attachments become OpenAI content
// parts: an image sent whole an image_url at the request's detail, a
// document its text, anything not carried (an older image, a deleted
// file) its label; the offline stand-in says what it was given.
func TestWithParts(t *testing.T) {
	img := history.Part{ID: "i", Type: "image/png", Name: "cat.png", Size: 1200, Width: 4, Height: 3}
	old := history.Part{ID: "o", Type: "image/jpeg", Name: "old.jpg", Size: 10, Omitted: true}
	doc := history.Part{ID: "d", Type: "application/pdf", Name: "r.pdf", Size: 99}
	gone := history.Part{ID: "g", Type: "text/plain", Name: "gone.txt", Size: 3}
	m := history.Message{Role: history.RoleUser, Content: "look", Attachments: []history.Part{img, old, doc, gone}}
	req := chat.Request{Messages: []history.Message{m}, ImageDetail: "low", Parts: map[string]chat.PartContent{
		"i": {URL: "data:image/png;base64,AAAA"}, "o": {URL: "data:image/jpeg;base64,BBBB"}, "d": {Text: "[document: r.pdf]\nrevenue"}}}
	got := Messages(req)[0]
	want := []openai.ChatMessagePart{
		{Type: "text", Text: "look"},
		{Type: "image_url", ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA", Detail: "low"}},
		{Type: "text", Text: "[image: old.jpg]"},
		{Type: "text", Text: "[document: r.pdf]\nrevenue"},
		{Type: "text", Text: "[document: gone.txt]"},
	}
	if got.Content != "" || len(got.MultiContent) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		g, w := got.MultiContent[i], want[i]
		if g.Type != w.Type || g.Text != w.Text || (w.ImageURL == nil) != (g.ImageURL == nil) || w.ImageURL != nil && *g.ImageURL != *w.ImageURL {
			t.Errorf("part %d: %+v, want %+v", i, g, w)
		}
	}
	if plain := Messages(chat.Request{Messages: []history.Message{{Role: history.RoleAssistant, Content: "x"}}})[0]; plain.MultiContent != nil || plain.Content != "x" {
		t.Fatalf("a message without parts: %+v", plain)
	}
	reply, err := Offline{}.Generate(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, says := range []string{`an image "cat.png" (image/png, 1200 bytes, 4x3)`, `"old.jpg" (image/jpeg, 10 bytes, by name only)`, `a document "r.pdf" (application/pdf, 99 bytes)`} {
		if !strings.Contains(reply.Content, says) {
			t.Errorf("the stand-in's reply %q does not say %q", reply.Content, says)
		}
	}
}

// TestSummaryQuotesFiles: a summary request names what a message
// attached, so the summary can say so.
func TestSummaryQuotesFiles(t *testing.T) {
	m := history.Message{Role: history.RoleUser, Content: "see", Attachments: []history.Part{
		{ID: "i", Type: "image/png", Name: "cat.png", Alt: "a grey cat"}, {ID: "d", Type: "application/pdf", Name: "r.pdf"}}}
	if got, want := quote(m).Text, "see\n[image: cat.png] (a grey cat)\n[document: r.pdf]"; got != want {
		t.Fatalf("quoted %q, want %q", got, want)
	}
}
