package chat

import (
	"context"
	"sync/atomic"

	"github.com/chatmemory/backend/history"
)

// Meter adds up the model tokens spent on a user's behalf besides a turn's
// own reply: titles, summaries, extractions. afterTurn charges the total
// against the user's daily limit once, when that work is done.
type Meter struct{ tokens atomic.Int64 }

type meterKey struct{}

// WithMeter returns ctx carrying a new meter, and the meter.
func WithMeter(ctx context.Context) (context.Context, *Meter) {
	m := &Meter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

// Charge adds n tokens to the meter ctx carries, if any: what a call
// other than a chat completion (an embedding) spent for the user.
func Charge(ctx context.Context, n int) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok && n > 0 {
		m.tokens.Add(int64(n))
	}
}

// Tokens is what the meter has counted.
func (m *Meter) Tokens() int { return int(m.tokens.Load()) }

// TextCounter counts the tokens of a text.
type TextCounter interface {
	Text(model, s string) int
}

// Metered wraps model so that the tokens of each call made under a meter
// (see WithMeter) are added to it: as the service reports them, or, when
// it reports none, as counted here from the request and the reply.
func Metered(model Model, count TextCounter) Model { return metered{model, count} }

type metered struct {
	Model
	count TextCounter
}

func (m metered) Generate(ctx context.Context, req Request, onDelta func(string)) (*Reply, error) {
	r, err := m.Model.Generate(ctx, req, onDelta)
	meter, _ := ctx.Value(meterKey{}).(*Meter)
	if err != nil || meter == nil {
		return r, err
	}
	n := r.PromptTokens + r.CompletionTokens
	if n == 0 {
		n = m.count.Text(req.Model, req.System) + m.count.Text(req.Model, req.Memory) + m.count.Text(req.Model, req.Context) + m.count.Text(req.Model, r.Content) + history.ReplyPriming
		for _, msg := range req.Messages {
			n += m.count.Text(req.Model, msg.Content) + 4
		}
	}
	meter.tokens.Add(int64(n))
	return r, nil
}
