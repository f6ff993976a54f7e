package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/prompts"
)

// OfflineModel is the name stored on replies of the offline stand-in.
const OfflineModel = "offline-stand-in"

// DefaultOfflinePace is the stand-in's pause between streamed chunks.
const DefaultOfflinePace = 40 * time.Millisecond

// offlineChunkWords is how many words the stand-in streams at a time.
const offlineChunkWords = 3

// Offline is a deterministic stand-in for a model, for local runs without
// OPENAI_API_KEY. Its replies are stored with model OfflineModel, which
// is how clients tell (and say, once per session) what answered; their
// text reads like a reply, so snippets and resumed streams read naturally.
// The work it does besides them looks like a product's: a title from the
// first words of the conversation, a summary that is a recognisable digest
// of what was said, and extractions that learn nothing.
type Offline struct {
	// Pace is the pause before each streamed chunk of a few words, so a
	// reply streams like a model's and can be stopped or resumed midway
	// (0: all at once).
	Pace time.Duration
}

// Generate answers a task by its instruction, and a chat with a fixed
// text about the last user message, streamed a few words at a time at
// Pace when asked.
func (o Offline) Generate(ctx context.Context, req chat.Request, onDelta func(string)) (*chat.Reply, error) {
	if len(req.Messages) == 1 {
		in := req.Messages[0].Content
		switch req.System {
		case prompts.Title:
			return offlineReply(offlineTitle(in)), nil
		case prompts.Summary:
			return offlineReply(offlineSummary(in)), nil
		case prompts.Extract:
			return offlineReply(`{"profile":null,"facts":[]}`), nil
		case prompts.Resolve:
			return offlineReply(`{"decisions":[]}`), nil
		case prompts.MonthNote, prompts.Background:
			return offlineReply(offlineHistory(in)), nil
		}
	}
	if call, ok := offlineToolCall(req); ok {
		return &chat.Reply{ToolCalls: []history.ToolCall{call}, Model: OfflineModel, FinishReason: "tool_calls"}, nil
	}
	var last history.Message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == history.RoleUser {
			last = req.Messages[i]
			break
		}
	}
	text := "You said: " + clipWords(last.Content, 200)
	if files := describeParts(last, req); files != "" {
		text += " You attached " + files + "."
	}
	if results := offlineToolResults(req.Messages); results != "" {
		text += " Your tools answered: " + results
	}
	text += " (" + strconv.Itoa(len(req.Messages)) + " messages of this conversation in view.)"
	if onDelta != nil {
		if err := o.stream(ctx, text, onDelta); err != nil {
			return nil, err
		}
	}
	return offlineReply(text), nil
}

// stream hands text to onDelta a few words at a time, pausing Pace before
// each chunk; it returns ctx's error when ctx ends first.
func (o Offline) stream(ctx context.Context, text string, onDelta func(string)) error {
	words := strings.SplitAfter(text, " ")
	for i := 0; i < len(words); i += offlineChunkWords {
		if o.Pace > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.Pace):
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		onDelta(strings.Join(words[i:min(i+offlineChunkWords, len(words))], ""))
	}
	return nil
}

func offlineReply(text string) *chat.Reply {
	return &chat.Reply{Content: text, Model: OfflineModel, FinishReason: "stop"}
}

// offlineTitle is the first six words of the user's first message (the
// first line of a title request), without punctuation at its ends,
// capitalized.
func offlineTitle(request string) string {
	line, _, _ := strings.Cut(request, "\n")
	line = strings.TrimPrefix(line, "user: ")
	words := strings.Fields(line)
	if len(words) > 6 {
		words = words[:6]
	}
	title := strings.TrimFunc(strings.Join(words, " "), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if title == "" {
		return "Offline chat"
	}
	r := []rune(title)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// offlineHistory is a month note or background of the stand-in: the
// titles a month note request lists ("- 2026-09-14 Title: summary"), or the
// notes a background request lists ("- 2026-09: note"), joined.
func offlineHistory(request string) string {
	var items []string
	for _, l := range strings.Split(request, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "- ")
		if !ok {
			continue
		}
		if date, title, ok := strings.Cut(rest, " "); ok && len(date) == len("2006-01-02") {
			title, _, _ = strings.Cut(title, ": ")
			rest = title
		}
		items = append(items, clipWords(rest, 80))
	}
	return clipWords("[offline stand-in] "+strings.Join(items, "; "), 190)
}

// digestHeader opens the stand-in's summaries.
const digestHeader = "[offline stand-in digest] Earlier in this conversation:"

// maxDigestLines bounds a digest: the most recent lines are kept.
const maxDigestLines = 24

// offlineSummary extends the digest a summary request carries (its
// "Summary so far") with a line per new message: who spoke and their first
// words.
func offlineSummary(request string) string {
	var lines []string
	if prev, ok := strings.CutPrefix(request, "Summary so far:\n"); ok {
		prev, _, _ = strings.Cut(prev, "\n\nNew messages:\n")
		for _, l := range strings.Split(prev, "\n") {
			if l = strings.TrimSpace(l); l != "" && l != digestHeader {
				lines = append(lines, l)
			}
		}
	}
	_, news, _ := strings.Cut(request, "New messages:\n")
	for _, l := range strings.Split(news, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if rest, ok := strings.CutPrefix(l, "assistant called "); ok {
			lines = append(lines, "- assistant called "+clipWords(rest, 80))
			continue
		}
		if who, said, ok := strings.Cut(l, ": "); ok {
			lines = append(lines, "- "+who+": "+clipWords(said, 80))
		}
	}
	if len(lines) > maxDigestLines {
		lines = lines[len(lines)-maxDigestLines:]
	}
	return digestHeader + "\n" + strings.Join(lines, "\n")
}

// offlineToolCall is the call the stand-in asks for, deterministically,
// when it is offered tools and the conversation's last message is the
// user's: the tool the choice names, else the first tool whose name the
// message holds, else (the choice being "required") the first tool. Its
// arguments carry the message's text.
func offlineToolCall(req chat.Request) (history.ToolCall, bool) {
	n := len(req.Messages)
	if len(req.Tools) == 0 || req.ToolChoice == chat.ToolChoiceNone || n == 0 || req.Messages[n-1].Role != history.RoleUser {
		return history.ToolCall{}, false
	}
	text := req.Messages[n-1].Content
	name := ""
	switch req.ToolChoice {
	case "", chat.ToolChoiceAuto, chat.ToolChoiceRequired:
		for _, t := range req.Tools {
			if strings.Contains(strings.ToLower(text), strings.ToLower(t.Name)) {
				name = t.Name
				break
			}
		}
		if name == "" && req.ToolChoice == chat.ToolChoiceRequired {
			name = req.Tools[0].Name
		}
	default:
		name = req.ToolChoice
	}
	if name == "" {
		return history.ToolCall{}, false
	}
	args, _ := json.Marshal(map[string]string{"text": clipWords(text, 200)})
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s/%s", n, name, text)
	return history.ToolCall{ID: fmt.Sprintf("call_%08x", h.Sum32()), Type: "function",
		Function: history.FunctionCall{Name: name, Arguments: string(args)}}, true
}

// offlineToolResults quotes the tool results that end msgs, if any.
func offlineToolResults(msgs []history.Message) string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == history.RoleTool; i-- {
		out = append([]string{clipWords(msgs[i].Content, 100)}, out...)
	}
	return strings.Join(out, "; ")
}

// clipWords is s cut to n runes, marked when cut.
func clipWords(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n])) + "…"
	}
	return s
}
