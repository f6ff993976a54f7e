package longterm

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/prompts"
)

// example returns the line of a prompt that shows the JSON to answer with.
func example(t *testing.T, prompt string) string {
	t.Helper()
	for _, line := range strings.Split(prompt, "\n") {
		if i := strings.Index(line, `{"`); i >= 0 {
			j := strings.LastIndex(line, "}")
			return line[i : j+1]
		}
	}
	t.Fatalf("no JSON example in %.60q…", prompt)
	return ""
}

// TestPromptFormatsParse: the answers the extraction and resolution
// prompts ask for are exactly what their parsers accept, fenced or not.
func TestPromptFormatsParse(t *testing.T) {
	ex := example(t, prompts.Extract)
	for _, raw := range []string{ex, "```json\n" + ex + "\n```"} {
		var got extraction
		if err := decodeModelJSON(raw, &got); err != nil {
			t.Fatalf("the extraction example does not parse: %v\n%s", err, raw)
		}
		if got.Profile == nil || len(got.Facts) != 1 || !validCategory(got.Facts[0].Category) || got.Facts[0].Confidence != 0.9 {
			t.Errorf("the extraction example parsed as %+v", got)
		}
	}
	res := strings.Replace(example(t, prompts.Resolve), "<id>", "f1", 1)
	ds, err := parseDecisions(res, 1, map[string]*Fact{"f1": {ID: "f1"}})
	if err != nil || ds[0] != (decision{kind: "same", existing: "f1"}) {
		t.Errorf("the resolution example parsed as %+v, %v", ds, err)
	}
	// The prompt names every category the parser accepts.
	for _, c := range []Category{CategoryPreference, CategoryProject, CategoryTechnical, CategoryPersonal} {
		if !validCategory(c) || !strings.Contains(prompts.Extract, string(c)) {
			t.Errorf("category %q: valid %v, named in the prompt %v", c, validCategory(c), strings.Contains(prompts.Extract, string(c)))
		}
	}
}
