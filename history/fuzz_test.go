package history

import (
	"strings"
	"sync"
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
)

var fuzzTok = sync.OnceValues(NewTikToken)

// FuzzTokenCount: counting never panics, never counts under tiktoken's
// exact count, and over-counts by a few tokens per cut at most (a cut can
// change how the pieces next to it split, digits in threes for example).
func FuzzTokenCount(f *testing.F) {
	for _, seed := range []string{"hello world", "", strings.Repeat("ab", 300), "漢字かな😀🎉 \n\t 123 's", strings.Repeat(" ", 500), "\xff\xfe"} {
		f.Add(seed)
	}
	tok, err := fuzzTok()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			s = s[:4096] // the exact count is quadratic: keep inputs short
		}
		for _, model := range []string{"gpt-4o", "gpt-4"} {
			exact := len(tok.encs[EncodingFor(model)].enc.EncodeOrdinary(s))
			got := tok.Text(model, s)
			if got < exact || got > exact+8*(len(s)/MaxRun) {
				t.Fatalf("%s: %q counted %d, exact %d", model, s, got, exact)
			}
		}
	})
}

// FuzzDrafts: any batch of drafts (as JSON) is accepted or refused with
// invalid-argument; a batch accepted has a sane tool sequence check.
func FuzzDrafts(f *testing.F) {
	for _, seed := range []string{
		`[{"role":"user","content":"hi"}]`,
		`[{"role":"assistant","content":"","toolCalls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r","toolCallId":"c1"}]`,
		`[{"role":"tool","content":"orphan","toolCallId":"nope"}]`,
		`[{"role":"user","content":"x","metadata":{"durationMs":-1,"sources":[""]}}]`,
		`[{"role":"god","content":"x"}]`, `[]`, `[{"role":"user","content":"x","bogus":1}]`,
	} {
		f.Add([]byte(seed), "key-1")
	}
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		var drafts []Draft
		if err := strictjson.Decode(body, &drafts); err != nil {
			if errs.CodeOf(err) != errs.EINVALID {
				t.Fatalf("decode: %v", err)
			}
			return
		}
		if err := Validate(key, drafts...); err != nil {
			if errs.CodeOf(err) != errs.EINVALID {
				t.Fatalf("validate: %v", err)
			}
			return
		}
		msgs := make([]Message, len(drafts))
		for i, d := range drafts {
			msgs[i] = Message{Role: d.Role, Content: d.Content, ToolCalls: d.ToolCalls, ToolCallID: d.ToolCallID}
		}
		if _, err := toolSequence(nil, msgs); err != nil && errs.CodeOf(err) != errs.EINVALID {
			t.Fatalf("tool sequence: %v", err)
		}
	})
}
