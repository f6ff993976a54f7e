package history

import (
	"slices"
	"time"

	"github.com/chatmemory/backend/sessions"
)

// Trim records in session s and its tail t that message retention deleted
// gone: stored messages of s with the lowest seqs, all before before.
// done says that no message before before is left once they go; keptFrom
// is then when the first message kept was written (zero if none is). A
// store calls it for each page of a trim, in the write that deletes the
// page, so the counters always count what is stored.
//
// The session's counters lose what gone held (its messages, tokens and
// ratings); HistoryFrom moves past them; long-term memory never waits for
// them; the tail drops them, and a tool result whose call went with them.
// What was derived from them stays: a summary that covers them keeps
// serving the context, as it would had they only left the window.
func Trim(s *sessions.Session, t *Tail, gone []Message, before int, done bool, keptFrom time.Time) {
	from := s.Bookkeeping.HistoryFrom
	if n := len(gone); n > 0 {
		from = max(from, gone[n-1].Seq+1)
	}
	if done {
		from = max(from, before)
		s.Bookkeeping.HistoryStartAt = keptFrom
	}
	s.Bookkeeping.HistoryFrom = from
	tokens := 0
	for _, m := range gone {
		tokens += m.Tokens
		if m.Feedback != nil {
			s.Feedback.Count(string(m.Feedback.Rating), -1)
		}
	}
	s.MessageCount = max(0, s.MessageCount-len(gone))
	s.TokenCount = max(0, s.TokenCount-tokens)
	s.Bookkeeping.LearnFrom = max(s.Bookkeeping.LearnFrom, from)
	if from >= s.NextSeq {
		s.Bookkeeping.PendingToolCalls = nil
	}
	i := 0
	for i < len(t.Messages) && t.Messages[i].Seq < from {
		i++
	}
	for i > 0 && i < len(t.Messages) && t.Messages[i].Role == RoleTool { // as Tail.add drops them
		i++
	}
	t.Messages = slices.Clone(t.Messages[i:])
}
