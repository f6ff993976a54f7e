package chat

import (
	"strings"
)

// ModelTokens are tokens a model was paid for: its input (all of it,
// cached or not), the part of the input the provider served from its
// prompt cache, and its output.
type ModelTokens struct {
	Input  int `json:"input" firestore:"input"`
	Cached int `json:"cached" firestore:"cached"`
	Output int `json:"output" firestore:"output"`
}

// Total is every token of t (input and output).
func (t ModelTokens) Total() int { return t.Input + t.Output }

// Add is t and u together.
func (t ModelTokens) Add(u ModelTokens) ModelTokens {
	return ModelTokens{Input: t.Input + u.Input, Cached: t.Cached + u.Cached, Output: t.Output + u.Output}
}

// Price is what a model costs, in dollars per million tokens: its input
// not served from the cache, its cached input, and its output.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cachedInput"`
	Output      float64 `json:"output"`
}

// Zero reports whether no price is known.
func (p Price) Zero() bool { return p == Price{} }

// InputDollars is what t's input costs at p, served as t says (cached),
// or, with noCache, as if nothing of it were cached.
func (p Price) InputDollars(t ModelTokens, noCache bool) float64 {
	if noCache {
		return float64(t.Input) * p.Input / 1e6
	}
	return p.Dollars(ModelTokens{Input: t.Input, Cached: t.Cached})
}

// Dollars is what t costs at p.
func (p Price) Dollars(t ModelTokens) float64 {
	uncached := max(t.Input-t.Cached, 0)
	return (float64(uncached)*p.Input + float64(t.Cached)*p.CachedInput + float64(t.Output)*p.Output) / 1e6
}

// listPrices are OpenAI's list prices (dollars per million tokens: input,
// cached input, output; standard tier, text) for models a deployment is
// likely to use, matched by prefix, longest first; CHAT_MODELS may set
// others, and should where a provider's prices differ. Checked on
// 2026-11-28 against OpenAI's model pages (developers.openai.com/api/docs/models:
// gpt-5 $1.25/$0.125/$10, gpt-5-nano $0.05/$0.005/$0.40) and its pricing
// page as reproduced by third parties (api pricing, November 2026):
// every row agrees (the gpt-5-nano page marks that model deprecated; its
// price stands while it is served).
var listPrices = []struct {
	prefix string
	price  Price
}{
	{"gpt-4o-mini", Price{0.15, 0.075, 0.60}},
	{"gpt-4o", Price{2.50, 1.25, 10}},
	{"gpt-4.1-nano", Price{0.10, 0.025, 0.40}},
	{"gpt-4.1-mini", Price{0.40, 0.10, 1.60}},
	{"gpt-4.1", Price{2, 0.50, 8}},
	{"gpt-5-mini", Price{0.25, 0.025, 2}},
	{"gpt-5-nano", Price{0.05, 0.005, 0.40}},
	{"gpt-5", Price{1.25, 0.125, 10}},
}

// ListPrice is model's list price, or the zero Price when it is not known.
func ListPrice(model string) Price {
	m, best, out := strings.ToLower(model), 0, Price{}
	for _, p := range listPrices {
		if strings.HasPrefix(m, p.prefix) && len(p.prefix) > best {
			best, out = len(p.prefix), p.price
		}
	}
	return out
}

// ModelBill is a day's replies of one model, as /usage shows them.
type ModelBill struct {
	ModelTokens
	Uncached int `json:"uncached"` // input tokens not served from the cache
	// Dollars is what they cost at the model's price; nil when no price
	// is known for it.
	Dollars *float64 `json:"dollars,omitempty"`
}

// billOf is t at price p (no dollars for a zero price).
func billOf(t ModelTokens, p Price) ModelBill {
	b := ModelBill{ModelTokens: t, Uncached: max(t.Input-t.Cached, 0)}
	if !p.Zero() {
		d := p.Dollars(t)
		b.Dollars = &d
	}
	return b
}
