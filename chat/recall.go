package chat

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// Recaller finds a user's earlier exchanges relevant to a message (see
// sessions.ContextSettings.Recall).
type Recaller interface {
	Recall(ctx context.Context, s *sessions.Session, query string, all bool, k int) ([]Recalled, error)
}

// Recalled is an earlier exchange a turn adds to what the model sees.
type Recalled struct {
	SessionID, SessionTitle string
	Question, Reply         history.Message
}

// recallHeader opens the recalled excerpts, so that the model knows what
// they are.
const recallHeader = "Excerpts recalled from the user's earlier conversations (by relevance to the current message; they may be out of date):"

// excerptOverhead over-counts what an excerpt adds besides its messages'
// tokens (its header line and role labels), so the cap and the budget hold.
const excerptOverhead = 40

// recaller runs a turn's recall beside its claim: start begins it (once)
// when the session asks for it; block waits and returns what to add.
type recaller struct {
	once sync.Once
	done chan struct{}
	got  []Recalled
	err  error
}

func (svc *Service) startRecall(ctx context.Context, r *recaller, s *sessions.Session, query string) {
	mode := s.Context.Recall
	if svc.Finder == nil || mode == "" || mode == sessions.RecallOff || query == "" {
		return
	}
	r.once.Do(func() {
		r.done = make(chan struct{})
		k, _ := s.Context.RecallLimits()
		s := s.Clone()
		go func() {
			defer close(r.done)
			r.got, r.err = svc.Finder.Recall(ctx, s, query, mode == sessions.RecallAll, k)
		}()
	})
}

// with is the memory block with text (of n tokens) added, in the same
// system message.
func (m memoryBlock) with(text string, n int) memoryBlock {
	if m.text == "" {
		return memoryBlock{text: text, tokens: n + systemMessageTokens}
	}
	return memoryBlock{text: m.text + "\n\n" + text, tokens: m.tokens + n}
}

// recallBlock returns the excerpts to add to the turn's system messages, with
// their tokens: those not in the context already, within the session's
// cap. A recall that failed adds nothing (and is logged).
func (svc *Service) recallBlock(ctx context.Context, r *recaller, s *sessions.Session, c *history.Context) (string, int) {
	if r.done == nil {
		return "", 0
	}
	<-r.done
	if r.err != nil {
		svc.logError(ctx, "recall failed; the turn goes on without it", s.ID, r.err)
		return "", 0
	}
	in := map[string]bool{}
	for _, m := range c.Messages {
		in[m.ID] = true
	}
	_, limit := s.Context.RecallLimits()
	var b strings.Builder
	tokens := 0
	for _, x := range r.got {
		if x.SessionID == s.ID && (in[x.Question.ID] || in[x.Reply.ID]) {
			continue
		}
		n := x.Question.Tokens + x.Reply.Tokens + excerptOverhead
		if tokens+n > limit {
			continue
		}
		tokens += n
		title := x.SessionTitle
		if x.SessionID == s.ID {
			title = "this conversation"
		}
		fmt.Fprintf(&b, "\n\n[%s, %q]\nuser: %s\nassistant: %s", x.Reply.CreatedAt.UTC().Format("2006-01-02"), title, x.Question.Content, x.Reply.Content)
	}
	if tokens == 0 {
		return "", 0
	}
	return recallHeader + b.String(), tokens
}
