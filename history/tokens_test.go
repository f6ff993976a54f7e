package history

import "testing"

func TestTikToken(t *testing.T) {
	tok, err := NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model, text string
		want        int
	}{
		{"gpt-4o", "hello world", 2},
		{"gpt-4", "hello world", 2},
		{"gpt-4o", "", 0},
		{"gpt-4", "antidisestablishmentarianism", 6},
	}
	for _, c := range cases {
		if got := tok.Text(c.model, c.text); got != c.want {
			t.Errorf("Text(%s, %q) = %d, want %d", c.model, c.text, got, c.want)
		}
	}
	m := &Message{Role: RoleUser, Content: "hello world"}
	if got, want := tok.Count("gpt-4o", m), tokensPerMessage+1+2; got != want {
		t.Errorf("Count = %d, want %d (overhead + role + content)", got, want)
	}
	withCall := &Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Function: FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}}}}
	if got := tok.Count("gpt-4o", withCall); got <= tokensPerMessage+tokensPerTool {
		t.Errorf("tool call counted as %d tokens", got)
	}
	for model, enc := range map[string]string{"gpt-4o-mini": "o200k_base", "gpt-4.1": "o200k_base", "gpt-4": "cl100k_base", "gpt-3.5-turbo": "cl100k_base", "llama3": "o200k_base"} {
		if got := EncodingFor(model); got != enc {
			t.Errorf("EncodingFor(%s) = %s, want %s", model, got, enc)
		}
	}
}
