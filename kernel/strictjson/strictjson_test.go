package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

type inner struct {
	Budget int `json:"budgetTokens"`
}

// strictInner decodes strictly from its own UnmarshalJSON, as the
// domain's request types do.
type strictInner struct {
	Window int `json:"windowExchanges"`
}

func (s *strictInner) UnmarshalJSON(data []byte) error {
	type plain strictInner
	return Decode(data, (*plain)(s))
}

type body struct {
	Title  string            `json:"title"`
	Tags   []string          `json:"tags"`
	Custom map[string]string `json:"custom"`
	Inner  inner             `json:"memory"`
	Strict *strictInner      `json:"strict"`
	When   time.Time         `json:"when"`
	Raw    json.RawMessage   `json:"raw"`
	Ratio  float64           `json:"ratio"`
	Hidden string            `json:"-"`
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		body, message string // message "" means accepted
	}{
		{`{"title":"x","tags":["a"],"custom":{"k":"v"},"memory":{"budgetTokens":300},"strict":{"windowExchanges":2},"when":"2026-01-02T03:04:05Z","raw":{"any":[1]},"ratio":0.5}`, ""},
		{`{"title":5}`, "title: must be a string"},
		{`{"tags":"a"}`, "tags: must be a list"},
		{`{"tags":["a",1]}`, "tags[1]: must be a string"},
		{`{"custom":{"k":1}}`, "custom.k: must be a string"},
		{`{"memory":{"budgetTokens":1.5}}`, "memory.budgetTokens: must be a whole number"},
		{`{"memory":{"budgetTokens":99999999999999999999}}`, "memory.budgetTokens: must be a whole number in range"},
		{`{"memory":{"bogus":1}}`, "memory.bogus: unknown field"},
		{`{"strict":{"bogus":1}}`, "strict.bogus: unknown field"},
		{`{"strict":{"windowExchanges":"2"}}`, "strict.windowExchanges: must be a whole number"},
		{`{"Hidden":"x"}`, "Hidden: unknown field"},
		{`{"ratio":"x"}`, "ratio: must be a number"},
		{`{"when":5}`, "when: must be a time in RFC 3339 format"},
		{`{"custom":[]}`, "custom: must be an object"},
		{`{"memory":{"budgetTokens":true}}`, "memory.budgetTokens: must be a whole number"},
		{`{"Title":"x"}`, `Title: unknown field (names are exact: "title")`},
		{`{"memory":{"BudgetTokens":3}}`, `memory.BudgetTokens: unknown field (names are exact: "budgetTokens")`},
		{`{"strict":{"windowexchanges":2}}`, `strict.windowexchanges: unknown field (names are exact: "windowExchanges")`},
		{`{"title":"a\u0000b"}`, "title: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"title":"a\bb"}`, "title: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"title":"tab\tcr\rlf\n, escaped \\u0000 and \u007f"}`, ""},
		{`{"tags":["a","\u001b[31m"]}`, "tags[1]: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"custom":{"k":"\f"}}`, "custom.k: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"custom":{"k\u0000":"v"}}`, "custom: holds a key with a control character (only tab, CR and LF are allowed)"},
		{`{"raw":{"deep":["\u0001"]}}`, "raw.deep[0]: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"strict":{"windowExchanges":2},"title":"\u0000"}`, "title: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"custom":{"Title":"v","MEMORY":"w"}}`, ""},
		{`{"custom":{"k":"v"},"TAGS":["a"]}`, `TAGS: unknown field (names are exact: "tags")`},
		{`{"raw":{"Title":1},"Ratio":1}`, `Ratio: unknown field (names are exact: "ratio")`},
		{`{"tıtle":"x"}`, `tıtle: unknown field`},
		{`[]`, "the body must be an object"},
		{`{"title":"x"} {}`, "malformed JSON: trailing data after the object"},
		{`{"title":`, "malformed JSON: syntax error"},
	} {
		var b body
		err := Decode([]byte(tc.body), &b)
		if tc.message == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.body, err)
			}
			continue
		}
		if errs.CodeOf(err) != errs.EINVALID || errs.Message(err) != tc.message {
			t.Errorf("%s: got %q (%s), want %q", tc.body, errs.Message(err), errs.CodeOf(err), tc.message)
		}
	}
}

// TestDecodeOpen: a part of another's document is read with exact names
// and no control characters, passing over the keys it does not read.
func TestDecodeOpen(t *testing.T) {
	for _, tc := range []struct {
		body, message string
	}{
		{`{"title":"x","theirs":{"any":1}}`, ""},
		{`{"Title":"x"}`, `Title: unknown field (names are exact: "title")`},
		{`{"title":"x","theirs":"\u0000"}`, "theirs: must not hold control characters (only tab, CR and LF are allowed)"},
		{`{"title":5}`, "title: must be a string"},
	} {
		var b body
		err := DecodeOpen([]byte(tc.body), &b)
		if tc.message == "" {
			if err != nil || b.Title != "x" {
				t.Errorf("%s: %v %+v", tc.body, err, b)
			}
			continue
		}
		if errs.CodeOf(err) != errs.EINVALID || errs.Message(err) != tc.message {
			t.Errorf("%s: got %q (%s), want %q", tc.body, errs.Message(err), errs.CodeOf(err), tc.message)
		}
	}
}

// TestClean: a document is passed without the walk only when nothing in
// it may be a field's name in another case or a control character.
func TestClean(t *testing.T) {
	for _, tc := range []struct {
		body  string
		clean bool
	}{
		{`{"title":"x","tags":["a"],"custom":{"k":"v"},"memory":{"budgetTokens":300},"strict":{"windowExchanges":2},"raw":{"any":[{"x":1}]}}`, true},
		{`{"custom":{"title":"v"}}`, true}, // a map's key spelled as a field is
		{`{"custom":{"Title":"v"}}`, false},
		{`{"memory":{"BudgetTokens":3}}`, false},
		{`{"raw":{"Ratio":1}}`, false},
		{`{"custom":{"clé":"v"}}`, false},
		{`{"title":"\u0001"}`, false},
		{`{"title":"\f"}`, false},
	} {
		if got := clean([]byte(tc.body), reflect.TypeOf(&body{})); got != tc.clean {
			t.Errorf("%s: clean %v, want %v", tc.body, got, tc.clean)
		}
	}
}
