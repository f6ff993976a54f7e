package recall

import (
	"slices"
	"strings"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// UnitMessages are the messages one unit of search is made of: a question
// and its reply; the results of the tools a reply called, with the answer
// given after them (or alone, when the model called tools again); or one message with
// no partner (a session's opening reply, a question left unanswered, a
// reply appended apart from its question). Every message search finds
// (see history.Message.Searchable) is in exactly one.
type UnitMessages struct {
	Question, Reply *history.Message
	Tools           []*history.Message // tool results, oldest first
	// Files are the texts of the documents its messages carry, by id:
	// searched with the message, as are its files' names and alt texts.
	Files map[string]string
}

// Tool results a unit keeps the start of: each at most maxToolExcerpt
// bytes, at most maxToolExcerpts of them (their words are all weighed;
// see MaxExcerptChars).
const (
	maxToolExcerpt  = 1000
	maxToolExcerpts = 8
)

// id names the unit: its reply's id, else its question's, else its first
// tool result's.
func (u UnitMessages) id() string {
	switch {
	case u.Reply != nil:
		return u.Reply.ID
	case u.Question != nil:
		return u.Question.ID
	}
	return u.Tools[0].ID
}

// text is what u is embedded as.
func (u UnitMessages) text() string { return strings.Join(u.texts(), "\n") }

// exchange is u as session s keeps it, its words weighed, not embedded.
func (u UnitMessages) stored(s *sessions.Session, model string) Unit {
	x := Unit{UserID: s.UserID, SessionID: s.ID, Model: model, Bag: BagOf(u.texts()...)}
	if u.Question != nil {
		x.Question = excerpt(u.Question, MaxExcerptChars)
	}
	if u.Reply != nil {
		x.Reply = excerpt(u.Reply, MaxExcerptChars)
	}
	for _, m := range u.Tools[:min(len(u.Tools), maxToolExcerpts)] {
		x.Tools = append(x.Tools, excerpt(m, maxToolExcerpt))
	}
	return x
}

// texts are what u is weighed by, in order: question, tool results, reply.
func (u UnitMessages) texts() []string {
	var out []string
	for _, m := range slices.Concat([]*history.Message{u.Question}, u.Tools, []*history.Message{u.Reply}) {
		if m != nil {
			out = append(out, clip(m.Content+u.filesText(m), maxEmbedChars/(2+len(u.Tools))))
		}
	}
	return out
}

// filesText is what m's attachments add to its text: each one's name
// (its words: "q3-report.pdf" is "q3 report pdf"), alt text and a
// document's text.
func (u UnitMessages) filesText(m *history.Message) string {
	var b strings.Builder
	for _, p := range m.Attachments {
		b.WriteString("\n" + p.Name)
		if p.Alt != "" {
			b.WriteString("\n" + p.Alt)
		}
		if text := u.Files[p.ID]; text != "" {
			b.WriteString("\n" + text)
		}
	}
	return b.String()
}

// Units are the units of search of msgs, as their messages (a session's, every branch's: a
// regenerated reply answers a question far back; or a batch just stored):
// each reply with text and its question; each reply with text after tool
// results, with them; the tool results of a round whose reply called
// tools again, together; and each other message search finds on its own.
func Units(msgs []history.Message) []UnitMessages {
	bySeq := make(map[int]*history.Message, len(msgs))
	for i := range msgs {
		bySeq[msgs[i].Seq] = &msgs[i]
	}
	used := map[int]bool{}
	var out []UnitMessages
	for i := range msgs {
		m := &msgs[i]
		if m.Role != history.RoleAssistant || !m.Searchable() {
			continue
		}
		switch p := bySeq[m.ParentSeq]; {
		case p == nil:
		case p.Role == history.RoleUser && p.Searchable():
			out = append(out, UnitMessages{Question: p, Reply: m})
			used[p.Seq], used[m.Seq] = true, true
		case p.Role == history.RoleTool:
			tools := toolRound(bySeq, p)
			out = append(out, UnitMessages{Reply: m, Tools: tools})
			used[m.Seq] = true
			for _, t := range tools {
				used[t.Seq] = true
			}
		}
	}
	rounds := map[int][]*history.Message{} // the tool results left, by their first's seq
	var firsts []int
	for i := range msgs {
		m := &msgs[i]
		switch {
		case used[m.Seq] || !m.Searchable():
		case m.Role == history.RoleTool:
			first := toolRound(bySeq, m)[0].Seq
			if _, ok := rounds[first]; !ok {
				firsts = append(firsts, first)
			}
			rounds[first] = append(rounds[first], m)
		case m.Role == history.RoleUser:
			out = append(out, UnitMessages{Question: m})
		default:
			out = append(out, UnitMessages{Reply: m})
		}
	}
	for _, first := range firsts {
		out = append(out, UnitMessages{Tools: rounds[first]})
	}
	return out
}

// toolRound is the tool results of last's round up to last, oldest
// first: last and the tool results before it, back to the call.
func toolRound(bySeq map[int]*history.Message, last *history.Message) []*history.Message {
	var out []*history.Message
	for m := last; m != nil && m.Role == history.RoleTool; m = bySeq[m.ParentSeq] {
		if m.Searchable() {
			out = append(out, m)
		}
	}
	slices.Reverse(out)
	return out
}
