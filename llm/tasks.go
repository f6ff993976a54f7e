package llm

import (
	"context"
	"strings"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
)

// maxQuoted bounds how much of one message a summary or title request
// quotes, so each request costs a bounded amount.
const maxQuoted = 4000

// Summarizer asks a model to extend a conversation's running summary.
type Summarizer struct {
	Model chat.Model
}

// Summarize returns the previous summary extended with msgs.
func (s Summarizer) Summarize(ctx context.Context, model, previous string, msgs []history.Message) (string, string, error) {
	var b strings.Builder
	if previous != "" {
		b.WriteString("Summary so far:\n" + previous + "\n\n")
	} else {
		b.WriteString("There is no summary yet.\n\n")
	}
	b.WriteString("New messages:\n")
	for _, m := range msgs {
		b.WriteString(Transcript(m))
		b.WriteByte('\n')
	}
	reply, err := instruct(ctx, s.Model, model, history.SummaryInstructions, b.String())
	if err != nil {
		return "", "", err
	}
	return reply.Content, reply.Model, nil
}

// instruct asks model one thing: user text under a system instruction.
func instruct(ctx context.Context, m chat.Model, model, system, user string) (*chat.Reply, error) {
	return m.Generate(ctx, chat.Request{
		Model:    model,
		System:   system,
		Messages: []history.Message{{Role: history.RoleUser, Content: user}},
	}, nil)
}

// Transcript renders one message as a line of a transcript.
func Transcript(m history.Message) string {
	text := m.Content
	if r := []rune(text); len(r) > maxQuoted {
		text = string(r[:maxQuoted]) + " […]"
	}
	switch {
	case m.Role == history.RoleTool:
		return "tool result (" + m.ToolCallID + "): " + text
	case len(m.ToolCalls) > 0:
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.Function.Name+"("+c.Function.Arguments+")")
		}
		return "assistant called " + strings.Join(calls, ", ") + " " + text
	}
	return string(m.Role) + ": " + text
}

// TitleInstructions asks for a title.
const TitleInstructions = "Write a title of at most six words for the conversation below. " +
	"Answer with the title only: no quotes, no trailing punctuation."

// Titler asks a model to name a conversation.
type Titler struct {
	Model chat.Model
}

// Title proposes a title from the first exchange.
func (t Titler) Title(ctx context.Context, model, user, reply string) (string, error) {
	msg := Transcript(history.Message{Role: history.RoleUser, Content: user}) + "\n" +
		Transcript(history.Message{Role: history.RoleAssistant, Content: reply})
	r, err := instruct(ctx, t.Model, model, TitleInstructions, msg)
	if err != nil {
		return "", err
	}
	return r.Content, nil
}

// Completer asks a model one instruction (for long-term memory).
type Completer struct {
	Model chat.Model
}

// Complete answers the user text under the system instruction.
func (c Completer) Complete(ctx context.Context, model, system, user string) (string, error) {
	r, err := instruct(ctx, c.Model, model, system, user)
	if err != nil {
		return "", err
	}
	return r.Content, nil
}
