package sessions

import (
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
)

// A session's context is what its model sees of the history on a turn: a
// Strategy, with its window and token budget. The stored tail it is built
// from lives in history (history.Tail); "memory" means only the user's
// long-term memory (package longterm).

// Strategy names how a session's history is chosen for the model.
type Strategy string

const (
	// StrategyBuffer sends everything, and refuses the turn once everything
	// no longer fits the budget.
	StrategyBuffer Strategy = "buffer"
	// StrategyWindow sends the last WindowExchanges exchanges.
	StrategyWindow Strategy = "window"
	// StrategyTokenBuffer sends as many recent messages as fit the budget.
	StrategyTokenBuffer Strategy = "token_buffer"
	// StrategySummaryBuffer sends a running summary of older messages and
	// the recent ones verbatim. The default.
	StrategySummaryBuffer Strategy = "summary_buffer"
)

// Limits of context settings.
const (
	DefaultWindowExchanges = 10
	MaxWindowExchanges     = 200
	MinBudgetTokens        = 256
	// MaxBudgetTokens bounds any budget, whatever the model; the service
	// bounds it further by the session model's context size.
	MaxBudgetTokens = 2_000_000
)

// ContextSettings choose what a session's model sees of its history. Zero
// values mean the server's defaults. In the API they are a session's
// "memory" field, a name kept from before long-term memory existed so that
// clients do not break; error messages name that field ("memory.strategy").
type ContextSettings struct {
	Strategy        Strategy `json:"strategy,omitempty" firestore:"strategy"`
	WindowExchanges int      `json:"windowExchanges,omitempty" firestore:"windowExchanges"` // for window
	BudgetTokens    int      `json:"budgetTokens,omitempty" firestore:"budgetTokens"`       // 0: a share of the model's context size
	// Recall adds earlier exchanges relevant to the message to what the
	// model sees: off (the default), from this session, or from all of
	// the user's active and archived sessions; up to RecallK of them
	// (0: DefaultRecallK) within RecallTokens (0: DefaultRecallTokens).
	Recall       Recall `json:"recall,omitempty" firestore:"recall,omitempty"`
	RecallK      int    `json:"recallK,omitempty" firestore:"recallK,omitempty"`
	RecallTokens int    `json:"recallTokens,omitempty" firestore:"recallTokens,omitempty"`
	// ToolOutputs says which tool results a turn shows the model as a
	// short stub instead (nil: DefaultToolOutputs).
	ToolOutputs *ToolOutputs `json:"toolOutputs,omitempty" firestore:"toolOutputs,omitempty"`
	// Summaries says who makes summary_buffer's summaries: the server with
	// its model ("server", the default: after turns and after appends), or
	// the app with its own ("app": it stores them with POST …/compactions
	// when the context says one is due).
	Summaries Summaries `json:"summaries,omitempty" firestore:"summaries,omitempty"`
	// Trim says how window, token_buffer and summary_buffer drop old
	// messages (a summary: how far below its budget it compacts): in steps
	// ("steps", the default: the start of the request holds between steps,
	// so the provider's prompt cache serves it, at the cost of sending up
	// to a step more), or one exchange per turn ("each": the fewest tokens
	// sent, none of them cached once the window is full).
	Trim Trim `json:"trim,omitempty" firestore:"trim,omitempty"`
}

// Trim says how a window or a token budget drops old messages.
type Trim string

const (
	TrimSteps Trim = "steps"
	TrimEach  Trim = "each"
)

// WindowStep is how many exchanges a window of K in steps drops at once:
// it sends between K and K+WindowStep-1 exchanges, K+1 at a time, so
// between K and 2K. A step of half of K kept the start for too few turns
// for the provider's cache to serve most of what was sent (74% of a
// 10-exchange window's input over 120 turns in bench -bill, against 85%
// for K+1; docs/context.md).
func (m ContextSettings) WindowStep(k int) int {
	if m.Trim == TrimEach {
		return 1
	}
	return max(1, k+1)
}

// BudgetStep is the share of a token budget a token_buffer in steps drops
// at once (none for "each").
func (m ContextSettings) BudgetStep() float64 {
	if m.Trim == TrimEach {
		return 0
	}
	return 0.3
}

// Summaries says who makes a session's summaries.
type Summaries string

const (
	SummariesServer Summaries = "server"
	SummariesApp    Summaries = "app"
)

// ToolOutputs prunes what tools returned from what the model sees (the
// stored messages are untouched): results of tool exchanges older than
// the KeepLast most recent, and results longer than MaxTokens, are shown
// as a stub naming the call; the newest tool exchange is always whole.
// 0 turns a rule off.
type ToolOutputs struct {
	KeepLast  int `json:"keepLast" firestore:"keepLast"`
	MaxTokens int `json:"maxTokens" firestore:"maxTokens"`
}

// Bounds and defaults of tool-output pruning.
const (
	DefaultToolKeepLast  = 3
	DefaultToolMaxTokens = 2000
	MaxToolKeepLast      = 1000
	MaxToolMaxTokens     = 1_000_000
)

// ToolLimits are the settings' tool-output pruning, defaults applied.
func (m ContextSettings) ToolLimits() ToolOutputs {
	if m.ToolOutputs == nil {
		return ToolOutputs{KeepLast: DefaultToolKeepLast, MaxTokens: DefaultToolMaxTokens}
	}
	return *m.ToolOutputs
}

// Recall says where a turn looks for earlier exchanges to add.
type Recall string

const (
	RecallOff     Recall = "off"
	RecallSession Recall = "session"
	RecallAll     Recall = "all"
)

// Limits of recall.
const (
	DefaultRecallK      = 3
	MaxRecallK          = 10
	DefaultRecallTokens = 600
	MaxRecallTokens     = 4000
)

// RecallLimits are the settings' k and token cap, defaults applied.
func (m ContextSettings) RecallLimits() (k, tokens int) {
	k, tokens = m.RecallK, m.RecallTokens
	if k == 0 {
		k = DefaultRecallK
	}
	if tokens == 0 {
		tokens = DefaultRecallTokens
	}
	return k, tokens
}

// UnmarshalJSON rejects unknown keys.
func (m *ContextSettings) UnmarshalJSON(data []byte) error {
	type plain ContextSettings // without this method
	return strictjson.Decode(data, (*plain)(m))
}

// Validate checks the settings a caller chose.
func (m ContextSettings) Validate() error {
	switch m.Strategy {
	case "", StrategyBuffer, StrategyWindow, StrategyTokenBuffer, StrategySummaryBuffer:
	default:
		return errs.Errorf(errs.EINVALID, "memory.strategy must be buffer, window, token_buffer or summary_buffer")
	}
	if m.WindowExchanges < 0 || m.WindowExchanges > MaxWindowExchanges {
		return errs.Errorf(errs.EINVALID, "memory.windowExchanges must be between 1 and %d", MaxWindowExchanges)
	}
	switch m.Recall {
	case "", RecallOff, RecallSession, RecallAll:
	default:
		return errs.Errorf(errs.EINVALID, "memory.recall must be off, session or all")
	}
	if m.RecallK < 0 || m.RecallK > MaxRecallK {
		return errs.Errorf(errs.EINVALID, "memory.recallK must be between 1 and %d", MaxRecallK)
	}
	if m.RecallTokens < 0 || m.RecallTokens > MaxRecallTokens {
		return errs.Errorf(errs.EINVALID, "memory.recallTokens must be between 1 and %d", MaxRecallTokens)
	}
	switch m.Summaries {
	case "", SummariesServer, SummariesApp:
	default:
		return errs.Errorf(errs.EINVALID, "memory.summaries must be server or app")
	}
	switch m.Trim {
	case "", TrimSteps, TrimEach:
	default:
		return errs.Errorf(errs.EINVALID, "memory.trim must be steps or each")
	}
	if t := m.ToolOutputs; t != nil {
		if t.KeepLast < 0 || t.KeepLast > MaxToolKeepLast {
			return errs.Errorf(errs.EINVALID, "memory.toolOutputs.keepLast must be between 0 (no limit) and %d", MaxToolKeepLast)
		}
		if t.MaxTokens < 0 || t.MaxTokens > MaxToolMaxTokens {
			return errs.Errorf(errs.EINVALID, "memory.toolOutputs.maxTokens must be between 0 (no limit) and %d", MaxToolMaxTokens)
		}
	}
	return m.checkBudget(MaxBudgetTokens, "")
}

// checkBudget bounds BudgetTokens by max, the context size of model.
func (m ContextSettings) checkBudget(max int, model string) error {
	if m.BudgetTokens == 0 || (m.BudgetTokens >= MinBudgetTokens && m.BudgetTokens <= max) {
		return nil
	}
	if model != "" {
		return errs.Errorf(errs.EINVALID, "memory.budgetTokens must be between %d and %d (the context window of %s), or 0 for the default", MinBudgetTokens, max, model)
	}
	return errs.Errorf(errs.EINVALID, "memory.budgetTokens must be between %d and %d, or 0 for the default", MinBudgetTokens, max)
}

// withDefaults fills what m leaves open from def.
func (m ContextSettings) withDefaults(def ContextSettings) ContextSettings {
	if m.Strategy == "" {
		m.Strategy = def.Strategy
	}
	if m.Strategy == "" {
		m.Strategy = StrategySummaryBuffer
	}
	if m.WindowExchanges == 0 {
		m.WindowExchanges = def.WindowExchanges
	}
	if m.WindowExchanges == 0 {
		m.WindowExchanges = DefaultWindowExchanges
	}
	return m
}
