package sessions

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
	return DecodeJSON(data, (*plain)(m))
}

// Validate checks the settings a caller chose.
func (m Memory) Validate() error {
	switch m.Strategy {
	case "", StrategyBuffer, StrategyWindow, StrategyTokenBuffer, StrategySummaryBuffer:
	default:
		return Errorf(EINVALID, "memory.strategy must be buffer, window, token_buffer or summary_buffer")
	}
	if m.WindowExchanges < 0 || m.WindowExchanges > MaxWindowExchanges {
		return Errorf(EINVALID, "memory.windowExchanges must be between 1 and %d", MaxWindowExchanges)
	}
	if m.BudgetTokens != 0 && m.BudgetTokens < MinBudgetTokens {
		return Errorf(EINVALID, "memory.budgetTokens must be at least %d (or 0 for the default)", MinBudgetTokens)
	}
	return nil
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
