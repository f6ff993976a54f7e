package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/sessions"
)

// PruningRun compares a tool-heavy session with tool-output pruning at
// its defaults and off: each turn, an agent's tool exchange (a question, a
// call, a result of about toolResultTokens tokens, an answer) is appended,
// then a chat turn asks about it.
type PruningRun struct {
	Turns        int           `json:"turns"`
	ResultTokens int           `json:"toolResultTokens"`
	Budget       int           `json:"budgetTokens"`
	Sides        []PruningSide `json:"sides"`
}

// PruningSide is one way of running the session.
type PruningSide struct {
	Name string `json:"name"`
	// TokensPerTurn is what a turn sent the model (system prompt, memory,
	// summary and messages), mean.
	TokensPerTurn float64 `json:"tokensSentPerTurn"`
	// Summaries is how many summary requests the session made in Turns.
	Summaries int `json:"summaries"`
}

// Sizes of the pruning run.
const (
	pruningTurns     = 100
	toolResultTokens = 1500
	pruningBudget    = 16000
)

// runPruning runs the two sides in alternation on one emulator.
func runPruning(ctx context.Context, modelURL string, tok *history.TikToken, turns int) (*PruningRun, error) {
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-pruning-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	defer a.close()
	type side struct {
		name            string
		session         *sessions.Session
		sent, sentTurns int
		summaries       int
	}
	var mu sync.Mutex
	var current *side
	a.model.seen = func(req chat.Request) {
		mu.Lock()
		defer mu.Unlock()
		if current == nil {
			return
		}
		switch req.System {
		case prompts.Summary:
			current.summaries++
		case prompts.Title, prompts.Extract, prompts.Resolve:
		default: // a reply: what it was sent
			n := tok.Count(req.Model, &history.Message{Role: history.RoleSystem, Content: req.System}) +
				tok.Count(req.Model, &history.Message{Role: history.RoleSystem, Content: req.Memory}) + history.ReplyPriming
			for i := range req.Messages {
				n += tok.Count(req.Model, &req.Messages[i])
			}
			current.sent += n
			current.sentTurns++
		}
	}
	var sides []*side
	for _, s := range []struct {
		name  string
		tools *sessions.ToolOutputs
	}{{"pruning at its defaults (keepLast 3, maxTokens 2000)", nil}, {"pruning off", &sessions.ToolOutputs{}}} {
		sess, err := a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{Title: s.name,
			Context: sessions.ContextSettings{Strategy: sessions.StrategySummaryBuffer, BudgetTokens: pruningBudget, ToolOutputs: s.tools}})
		if err != nil {
			return nil, err
		}
		sides = append(sides, &side{name: s.name, session: sess})
	}
	result := words(3, toolResultTokens) // its tokens are reported
	for turn := 1; turn <= turns; turn++ {
		for _, sd := range sides {
			a.clock.advance(time.Minute)
			call := fmt.Sprintf("call_%d", turn)
			if _, err := a.app.Chat.Append(ctx, "bench-user", sd.session.ID, fmt.Sprint("t", turn), "", []history.Draft{
				{Role: history.RoleUser, Content: fmt.Sprintf("Fetch page %d about %s", turn, words(turn, 8))},
				{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: call, Type: "function", Function: history.FunctionCall{Name: "fetch_page", Arguments: fmt.Sprintf(`{"page":%d}`, turn)}}}},
				{Role: history.RoleTool, ToolCallID: call, Content: result},
				{Role: history.RoleAssistant, Content: fmt.Sprintf("Page %d is read.", turn)},
			}); err != nil {
				return nil, fmt.Errorf("pruning run, %s, turn %d: %w", sd.name, turn, err)
			}
			mu.Lock()
			current = sd
			mu.Unlock()
			if _, err := a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: "bench-user", SessionID: sd.session.ID,
				Message: fmt.Sprintf("What did page %d say? %s", turn, words(turn, 20))}); err != nil {
				return nil, fmt.Errorf("pruning run, %s, turn %d: %w", sd.name, turn, err)
			}
			mu.Lock()
			current = nil
			mu.Unlock()
		}
	}
	run := &PruningRun{Turns: turns, Budget: pruningBudget,
		ResultTokens: tok.Count(sides[0].session.Model, &history.Message{Role: history.RoleTool, ToolCallID: "call_1", Content: result})}
	for _, sd := range sides {
		run.Sides = append(run.Sides, PruningSide{Name: sd.name, TokensPerTurn: float64(sd.sent) / float64(max(sd.sentTurns, 1)), Summaries: sd.summaries})
	}
	return run, nil
}

func (r *Report) writePruning(w io.Writer) {
	p := r.Pruning
	if p == nil {
		return
	}
	fmt.Fprintf(w, "Tool-output pruning: a session of %d turns, each appending a tool exchange with a result of %d tokens and then asking about it (summary_buffer, a budget of %d tokens):\n\n", p.Turns, p.ResultTokens, p.Budget)
	fmt.Fprintln(w, "| session | tokens sent to the model per turn | summaries |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, s := range p.Sides {
		fmt.Fprintf(w, "| %s | %.0f | %d |\n", s.Name, s.TokensPerTurn, s.Summaries)
	}
	fmt.Fprintln(w)
}
