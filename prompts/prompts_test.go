package prompts

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/prompts.golden")

// pinned maps each Version to the hash of its rendering. A change of any
// prompt's wording or layout changes the hash: give it a new Version and a
// new row here (the old rows stay, as the record of what was sent when).
var pinned = map[string]string{
	"1": "0fff0eeb1e24c1d638670aeb71d53413282421b7decf073821e2a900f1631702",
	"2": "4972ef0728e798f7630b3bde7231b8c5493f4679eae4a6859047fdf1d23f1b40",
}

// render is every prompt, and every request layout over sample inputs.
func render() string {
	long := strings.Repeat("é", MaxQuoted+10)
	var b strings.Builder
	section := func(name, text string) {
		b.WriteString("=== " + name + "\n" + text + "\n")
	}
	section("Summary", Summary)
	section("Title", Title)
	section("Extract", Extract)
	section("Resolve", Resolve)
	section("MemoryHeader", MemoryHeader)
	section("SummaryMessage", SummaryMessage(41, "The user plans a trip to Lisbon."))
	section("SummaryRequest, first", SummaryRequest("", []Quote{
		{Role: "user", Text: "What's the weather in Lisbon?"},
		{Role: "assistant", Calls: []string{`weather({"city":"Lisbon"})`}},
		{Role: "tool", ToolCallID: "call_1", Text: `{"temp":21}`},
		{Role: "assistant", Text: "21 °C and sunny."},
	}))
	section("SummaryRequest, again", SummaryRequest("The user plans a trip.", []Quote{{Role: "user", Text: long}}))
	section("TitleRequest", TitleRequest("Plan a trip to Lisbon", "Here is a plan."))
	section("ExtractRequest", ExtractRequest(
		[]ProfileLine{{"Work", "Backend engineer"}, {"Personal", " "}, {"Current focus", ""}},
		[]Said{{"user", "I'm vegetarian."}, {"assistant", "Noted."}}))
	section("ResolveRequest", ResolveRequest([]Candidate{
		{Text: "The user is vegan.", Similar: []Known{{"f1", "The user is vegetarian."}}},
		{Text: "The user lives in Porto."},
	}))
	section("MonthNote", MonthNote)
	section("Background", Background)
	section("MonthNoteRequest", MonthNoteRequest("2026-09", []Episode{
		{Date: "2026-09-14", Title: "RAG pipeline  for invoices", Summary: "Chose a PDF parser;\nchunking by page."},
		{Date: "2026-09-02", Title: "Lisbon trip"},
	}))
	section("BackgroundRequest", BackgroundRequest([][2]string{{"2026-03", "Worked on a RAG pipeline."}, {"2026-02", "Planned a trip to Lisbon."}}))
	for i, l := range HistoryLabels {
		section("HistoryLabels "+string(rune('0'+i)), l)
	}
	return b.String()
}

// TestPromptsArePinned: the prompts render exactly as testdata/prompts.golden
// (go test ./prompts -update rewrites it) and their hash is the one pinned
// for Version.
func TestPromptsArePinned(t *testing.T) {
	got := render()
	golden := filepath.Join("testdata", "prompts.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("prompts differ from %s at line %d:\n got: %q\nwant: %q\n(run go test ./prompts -update, then give the change a new Version)", golden, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("prompts differ from %s in length: %d lines, want %d", golden, len(gl), len(wl))
	}
	sum := sha256.Sum256([]byte(got))
	if h := hex.EncodeToString(sum[:]); pinned[Version] != h {
		t.Fatalf("prompts of version %q hash to %s, pinned %q: a changed prompt needs a new Version and a row in pinned", Version, h, pinned[Version])
	}
}

func TestQuoteLine(t *testing.T) {
	for _, tc := range []struct {
		q    Quote
		want string
	}{
		{Quote{Role: "user", Text: "hi"}, "user: hi"},
		{Quote{Role: "tool", ToolCallID: "c1", Text: "42"}, "tool result (c1): 42"},
		{Quote{Role: "assistant", Calls: []string{"f(1)", "g()"}}, "assistant called f(1), g() "},
		{Quote{Role: "user", Text: strings.Repeat("a", MaxQuoted+1)}, "user: " + strings.Repeat("a", MaxQuoted) + " […]"},
		{Quote{Role: "user", Text: strings.Repeat("é", MaxQuoted)}, "user: " + strings.Repeat("é", MaxQuoted)},
	} {
		if got := tc.q.Line(); got != tc.want {
			t.Errorf("%+v: got %.80q…, want %.80q…", tc.q, got, tc.want)
		}
	}
}
