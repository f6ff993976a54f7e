package llm

import (
	"context"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/prompts"
)

// Summarizer asks a model to extend a conversation's running summary.
type Summarizer struct {
	Model chat.Model
}

// Summarize returns the previous summary extended with msgs.
func (s Summarizer) Summarize(ctx context.Context, model, previous string, msgs []history.Message) (string, string, error) {
	quotes := make([]prompts.Quote, len(msgs))
	for i, m := range msgs {
		quotes[i] = quote(m)
	}
	reply, err := instruct(ctx, s.Model, model, prompts.Summary, prompts.SummaryRequest(previous, quotes))
	if err != nil {
		return "", "", err
	}
	return reply.Content, reply.Model, nil
}

// quote is m as a summary request quotes it: its files by their labels
// and alt texts.
func quote(m history.Message) prompts.Quote {
	q := prompts.Quote{Role: string(m.Role), Text: m.Content, ToolCallID: m.ToolCallID}
	for _, p := range m.Attachments { // a summary says what was attached
		q.Text += "\n" + p.Label()
		if p.Alt != "" {
			q.Text += " (" + p.Alt + ")"
		}
	}
	for _, c := range m.ToolCalls {
		q.Calls = append(q.Calls, c.Function.Name+"("+c.Function.Arguments+")")
	}
	return q
}

// Titler asks a model to name a conversation.
type Titler struct {
	Model chat.Model
}

// Title proposes a title from the first exchange.
func (t Titler) Title(ctx context.Context, model, user, reply string) (string, error) {
	r, err := instruct(ctx, t.Model, model, prompts.Title, prompts.TitleRequest(user, reply))
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

// instruct asks model one thing: user text under a system instruction.
func instruct(ctx context.Context, m chat.Model, model, system, user string) (*chat.Reply, error) {
	return m.Generate(ctx, chat.Request{
		Model:    model,
		System:   system,
		Messages: []history.Message{{Role: history.RoleUser, Content: user}},
	}, nil)
}
