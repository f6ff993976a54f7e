package sessions

import (
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
)

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

// Limits of memory settings.
const (
	DefaultWindowExchanges = 10
	MaxWindowExchanges     = 200
	MinBudgetTokens        = 256
	// MaxBudgetTokens bounds any budget, whatever the model; the service
	// bounds it further by the session model's context window.
	MaxBudgetTokens = 2_000_000
)

// Memory is what a session's model sees of its history. Zero values mean
// the server's defaults.
type Memory struct {
	Strategy        Strategy `json:"strategy,omitempty"`
	WindowExchanges int      `json:"windowExchanges,omitempty"` // for window
	BudgetTokens    int      `json:"budgetTokens,omitempty"`    // 0: a share of the model's window
}

// UnmarshalJSON rejects unknown keys.
func (m *Memory) UnmarshalJSON(data []byte) error {
	type plain Memory // without this method
	return strictjson.Decode(data, (*plain)(m))
}

// Validate checks the settings a caller chose.
func (m Memory) Validate() error {
	switch m.Strategy {
	case "", StrategyBuffer, StrategyWindow, StrategyTokenBuffer, StrategySummaryBuffer:
	default:
		return errs.Errorf(errs.EINVALID, "memory.strategy must be buffer, window, token_buffer or summary_buffer")
	}
	if m.WindowExchanges < 0 || m.WindowExchanges > MaxWindowExchanges {
		return errs.Errorf(errs.EINVALID, "memory.windowExchanges must be between 1 and %d", MaxWindowExchanges)
	}
	return m.checkBudget(MaxBudgetTokens, "")
}

// checkBudget bounds BudgetTokens by max, the context window of model.
func (m Memory) checkBudget(max int, model string) error {
	if m.BudgetTokens == 0 || (m.BudgetTokens >= MinBudgetTokens && m.BudgetTokens <= max) {
		return nil
	}
	if model != "" {
		return errs.Errorf(errs.EINVALID, "memory.budgetTokens must be between %d and %d (the context window of %s), or 0 for the default", MinBudgetTokens, max, model)
	}
	return errs.Errorf(errs.EINVALID, "memory.budgetTokens must be between %d and %d, or 0 for the default", MinBudgetTokens, max)
}

// withDefaults fills what m leaves open from def.
func (m Memory) withDefaults(def Memory) Memory {
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
