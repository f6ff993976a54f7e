package llm

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
)

// withParts is a user message with attachments as OpenAI's content
// parts: its text, then each image as an image_url part (at the
// request's detail), each document as a text part with its text, and
// whatever the request does not carry (an older turn's image, a file
// deleted since) as its label.
func withParts(om openai.ChatCompletionMessage, m history.Message, req chat.Request) openai.ChatCompletionMessage {
	if len(m.Attachments) == 0 || m.Role != history.RoleUser {
		return om
	}
	var parts []openai.ChatMessagePart
	if m.Content != "" {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
	}
	for _, p := range m.Attachments {
		c, ok := req.Parts[p.ID]
		switch {
		case ok && c.URL != "" && !p.Omitted:
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: c.URL, Detail: openai.ImageURLDetail(req.ImageDetail)}})
		case ok && c.Text != "":
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: c.Text})
		default:
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Label()})
		}
	}
	om.Content, om.MultiContent = "", parts
	return om
}

// describeParts is how the offline stand-in tells what a message carried:
// each file's kind, name, type and size (and an image's pixels), and
// whether it was sent whole.
func describeParts(m history.Message, req chat.Request) string {
	var out []string
	for _, p := range m.Attachments {
		_, sent := req.Parts[p.ID]
		d := fmt.Sprintf("%s %q (%s, %d bytes", kindOf(p), p.Name, p.Type, p.Size)
		if p.Width > 0 {
			d += fmt.Sprintf(", %dx%d", p.Width, p.Height)
		}
		if !sent || p.Omitted {
			d += ", by name only"
		}
		out = append(out, d+")")
	}
	return strings.Join(out, "; ")
}

func kindOf(p history.Part) string {
	if p.IsImage() {
		return "an image"
	}
	return "a document"
}
