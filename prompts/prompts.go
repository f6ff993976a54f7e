// Package prompts holds every text the backend writes to a model on its
// own behalf: the instructions of the summary, title, extraction,
// resolution and episodic history requests, how their inputs are laid out, and the headers of
// the system messages that carry a summary and the user's long-term memory
// into a turn. The operator's system prompt is configuration, not here.
//
// Version names the set. The tests pin the rendering of every prompt to a
// golden file and its hash to a version, so a change of wording is made on
// purpose, under a new Version; the tests of the packages that read the
// model's answers check that the formats these prompts ask for parse.
package prompts

import (
	"fmt"
	"strings"
)

// Version names the prompts below as a set. Version 2 added the episodic
// history's MonthNote and Background requests (history.go); version 1's
// prompts are unchanged in it.
const Version = "2"

// Summary asks for a running summary that also covers new messages.
const Summary = "You maintain the running summary of a conversation between a user and an assistant. " +
	"Rewrite the summary so that it also covers the new messages. Keep key entities (names, numbers, dates, places, " +
	"identifiers), the user's intent and stated preferences, decisions made, and open questions or tasks. " +
	"Write plain prose, as short as completeness allows, at most 300 words. Answer with the summary only."

// Title asks for a conversation's title.
const Title = "Write a title of at most six words for the conversation below. " +
	"Answer with the title only: no quotes, no trailing punctuation."

// Extract asks what the user said about themselves, as JSON.
const Extract = `You maintain a long-term memory about a user from their conversations with an assistant.
From the new messages, extract only what the USER clearly stated or strongly implied about themselves; never guess, never record what the assistant said about the world.
Answer with JSON only, in exactly this form:
{"profile":{"work":null,"personal":null,"focus":null},"facts":[{"content":"...","category":"preference","confidence":0.9}]}
- profile: a new one-or-two-sentence summary for work context, personal context and preferences, or current focus; null keeps the current one.
- facts: standalone sentences about the user ("The user prefers ..."), category one of preference, project, technical, personal, confidence from 0 to 1 (how clearly it was stated). An empty list if nothing qualifies.`

// Resolve asks whether candidate facts restate, replace or add to similar
// facts already known, as JSON.
const Resolve = `Compare each new candidate fact about a user with the existing facts listed under it.
Decide "same" if it restates an existing fact, "contradicts" if it replaces an existing fact (the user changed their mind or the situation changed), or "new" otherwise.
Answer with JSON only: {"decisions":[{"candidate":1,"decision":"same","existing":"<id>"}]} with one decision per candidate; "existing" names the fact for same and contradicts.`

// MemoryHeader opens the system message that carries the user's long-term
// memory into a turn.
const MemoryHeader = "What you know about the user from earlier conversations (use it when relevant; the user can correct it):"

// MemoryRecent opens the part of the memory block learned on the day it
// was last rebuilt: it is sent after the history, so that what is learned
// during a conversation does not change the start of the next request.
const MemoryRecent = "Learned today (as above):"

// MemoryRelevant opens the facts the memory block leaves out that are
// relevant to the user's current message, sent after the history.
const MemoryRelevant = "Also known about the user, relevant to this message:"

// summaryHeader opens the system message that carries a summary into a turn.
const summaryHeader = "Summary of the earlier conversation (messages 0–%d):\n"

// SummaryMessage is the text of the system message that carries a summary
// of every message up to endSeq into a turn.
func SummaryMessage(endSeq int, summary string) string {
	return fmt.Sprintf(summaryHeader, endSeq) + summary
}

// SummaryRequest is the user text of a summary request: the summary so far
// (if any), then the new messages.
func SummaryRequest(previous string, msgs []Quote) string {
	var b strings.Builder
	if previous != "" {
		b.WriteString("Summary so far:\n" + previous + "\n\n")
	} else {
		b.WriteString("There is no summary yet.\n\n")
	}
	b.WriteString("New messages:\n")
	for _, m := range msgs {
		b.WriteString(m.Line())
		b.WriteByte('\n')
	}
	return b.String()
}

// TitleRequest is the user text of a title request: the first exchange.
func TitleRequest(user, reply string) string {
	return Quote{Role: "user", Text: user}.Line() + "\n" + Quote{Role: "assistant", Text: reply}.Line()
}

// MaxQuoted bounds how much of one message a summary or title request
// quotes, so each request costs a bounded amount.
const MaxQuoted = 4000

// Quote is one message as a summary or title request quotes it.
type Quote struct {
	Role       string   // user, assistant, tool, system
	Text       string   // cut to MaxQuoted characters
	ToolCallID string   // of a tool result
	Calls      []string // of an assistant message that called tools: "name(arguments)"
}

// Line renders q as one line of a transcript.
func (q Quote) Line() string {
	text := q.Text
	if r := []rune(text); len(r) > MaxQuoted {
		text = string(r[:MaxQuoted]) + " […]"
	}
	switch {
	case q.Role == "tool":
		return "tool result (" + q.ToolCallID + "): " + text
	case len(q.Calls) > 0:
		return "assistant called " + strings.Join(q.Calls, ", ") + " " + text
	}
	return q.Role + ": " + text
}

// ProfileLine is one part of the user's profile as an extraction request
// shows it.
type ProfileLine struct {
	Label string // "Work", "Personal", "Current focus"
	Text  string // "" shows as (none)
}

// Said is a message an extraction request quotes.
type Said struct {
	Role string // user or assistant
	Text string // already cut to length by the caller
}

// ExtractRequest is the user text of an extraction request: the current
// profile, then the new messages.
func ExtractRequest(profile []ProfileLine, msgs []Said) string {
	var b strings.Builder
	b.WriteString("Current profile:\n")
	for _, p := range profile {
		text := p.Text
		if strings.TrimSpace(text) == "" {
			text = "(none)"
		}
		fmt.Fprintf(&b, "- %s: %s\n", p.Label, text)
	}
	b.WriteString("\nNew messages:\n")
	for _, m := range msgs {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Text)
	}
	return b.String()
}

// Candidate is a fact an extraction proposed, with the known facts that
// resemble it.
type Candidate struct {
	Text    string
	Similar []Known
}

// Known is a fact already stored.
type Known struct {
	ID, Text string
}

// ResolveRequest is the user text of a resolution request: each candidate,
// numbered from 1, with the similar facts under it.
func ResolveRequest(cands []Candidate) string {
	var b strings.Builder
	for i, c := range cands {
		fmt.Fprintf(&b, "Candidate %d: %s\n", i+1, c.Text)
		for _, f := range c.Similar {
			fmt.Fprintf(&b, "  existing %s: %s\n", f.ID, f.Text)
		}
	}
	return b.String()
}
