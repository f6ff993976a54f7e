package llm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/prompts"
)

// TestOffline: the stand-in's chat replies read like replies (no banner:
// the model name says what answered); its titles
// are the first words of the conversation, its summaries a digest that
// grows with the conversation and stays bounded, its extractions learn
// nothing, and its resolutions decide nothing: all parse as the real
// model's would.
func TestOffline(t *testing.T) {
	ctx := context.Background()
	ask := func(system, user string) string {
		t.Helper()
		r, err := Offline{}.Generate(ctx, chat.Request{System: system, Messages: []history.Message{{Role: history.RoleUser, Content: user}}}, nil)
		if err != nil || r.Model != OfflineModel {
			t.Fatalf("%v, %+v", err, r)
		}
		return r.Content
	}
	for _, tc := range []struct{ user, reply, want string }{
		{"how do I bake sourdough bread at home, step by step?", "first…", "How do I bake sourdough bread"},
		{"  ¿qué tal?  ", "bien", "Qué tal"},
		{"...", "?", "Offline chat"},
		{"", "", "Offline chat"},
	} {
		if got := ask(prompts.Title, prompts.TitleRequest(tc.user, tc.reply)); got != tc.want {
			t.Errorf("title of %q: %q, want %q", tc.user, got, tc.want)
		}
	}
	quote := func(role, text string) prompts.Quote { return prompts.Quote{Role: role, Text: text} }
	first := ask(prompts.Summary, prompts.SummaryRequest("", []prompts.Quote{quote("user", "I want to plan a trip to Lisbon in May"), quote("assistant", "Great, Lisbon in May is warm.")}))
	if !strings.HasPrefix(first, digestHeader) || !strings.Contains(first, "- user: I want to plan a trip to Lisbon in May") || !strings.Contains(first, "- assistant: Great") {
		t.Fatalf("first digest: %q", first)
	}
	second := ask(prompts.Summary, prompts.SummaryRequest(first, []prompts.Quote{quote("user", strings.Repeat("hotels near the river ", 20)),
		{Role: "assistant", Calls: []string{`search({"q": "hotels"})`}}}))
	if strings.Count(second, digestHeader) != 1 || !strings.Contains(second, "Lisbon") || !strings.Contains(second, "- assistant called search") || !strings.Contains(second, "…") {
		t.Fatalf("second digest: %q", second)
	}
	long := first
	for range 40 {
		long = ask(prompts.Summary, prompts.SummaryRequest(long, []prompts.Quote{quote("user", "and then?")}))
	}
	if n := strings.Count(long, "\n- "); n != maxDigestLines {
		t.Fatalf("a long digest keeps %d lines", n)
	}
	if got := ask(prompts.Extract, "user: I am vegetarian"); got != `{"profile":null,"facts":[]}` {
		t.Errorf("extraction: %s", got)
	}
	if got := ask(prompts.Resolve, "candidate 1"); got != `{"decisions":[]}` {
		t.Errorf("resolution: %s", got)
	}
	note := ask(prompts.MonthNote, prompts.MonthNoteRequest("2026-09", []prompts.Episode{
		{Date: "2026-09-14", Title: "PDF invoice parser", Summary: "chose a library"}, {Date: "2026-09-02", Title: "Oslo trip"}}))
	if note != "[offline stand-in] PDF invoice parser; Oslo trip" {
		t.Errorf("month note: %q", note)
	}
	if bg := ask(prompts.Background, prompts.BackgroundRequest([][2]string{{"2026-03", "Worked on RAG."}})); bg != "[offline stand-in] 2026-03: Worked on RAG." {
		t.Errorf("background: %q", bg)
	}
	if got := ask("You are helpful.", "hello"); got != "You said: hello (1 messages of this conversation in view.)" {
		t.Errorf("chat: %s", got)
	}
}

// TestOfflineStreams: the stand-in streams a few words at a time at its
// pace, the chunks adding up to the reply, and stops when its context
// ends midway.
func TestOfflineStreams(t *testing.T) {
	req := chat.Request{Messages: []history.Message{{Role: history.RoleUser, Content: "one two three four five six seven eight nine ten eleven twelve"}}}
	var chunks []string
	start := time.Now()
	r, err := Offline{Pace: 10 * time.Millisecond}.Generate(context.Background(), req, func(s string) { chunks = append(chunks, s) })
	if err != nil {
		t.Fatal(err)
	}
	if took, least := time.Since(start), time.Duration(len(chunks))*10*time.Millisecond; took < least {
		t.Errorf("%d chunks in %v, want at least %v", len(chunks), took, least)
	}
	if len(chunks) < 5 || strings.Join(chunks, "") != r.Content {
		t.Fatalf("chunks %q of %q", chunks, r.Content)
	}
	for _, c := range chunks {
		if n := len(strings.Fields(c)); n < 1 || n > offlineChunkWords {
			t.Errorf("chunk %q has %d words", c, n)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	_, err = Offline{Pace: 10 * time.Millisecond}.Generate(ctx, req, func(s string) {
		if got = append(got, s); len(got) == 2 {
			cancel()
		}
	})
	if err != context.Canceled || len(got) != 2 {
		t.Errorf("stopped after %d chunks: %v", len(got), err)
	}
}
