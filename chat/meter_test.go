package chat

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/history"
)

type fixedModel struct{ reply Reply }

func (m fixedModel) Generate(context.Context, Request, func(string)) (*Reply, error) {
	r := m.reply
	return &r, nil
}

type wordCounter struct{}

func (wordCounter) Text(_, s string) int { return len(s) }

func TestMetered(t *testing.T) {
	req := Request{Model: "m", System: "sys", Messages: []history.Message{{Role: history.RoleUser, Content: "hello"}}}
	cases := []struct {
		name  string
		reply Reply
		want  int
	}{
		{"reported usage", Reply{Content: "hi", PromptTokens: 10, CompletionTokens: 2}, 12},
		{"no usage reported: counted here", Reply{Content: "hi"}, len("sys") + len("hi") + history.ReplyPriming + len("hello") + 4},
	}
	for _, c := range cases {
		ctx, meter := WithMeter(context.Background())
		m := Metered(fixedModel{c.reply}, wordCounter{})
		for i := 0; i < 2; i++ {
			if _, err := m.Generate(ctx, req, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := meter.Tokens(); got != 2*c.want {
			t.Errorf("%s: metered %d, want %d", c.name, got, 2*c.want)
		}
	}
	// Without a meter in the context nothing is counted and nothing fails.
	if _, err := Metered(fixedModel{}, wordCounter{}).Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
}
