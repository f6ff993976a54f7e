package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/llm/llmtest"
	"github.com/chatmemory/backend/prompts"
)

// The model bill: a conversation of BillTurns turns through POST /chat in
// each scenario, with the requests' order for the provider's prompt cache
// and with the order before it (chat.Service.LegacyOrder) in the same
// run. The test model serves each request's longest prefix shared with a
// recent one of its session from its cache, as OpenAI does (from 1,024
// tokens in steps of 128, counted with tiktoken), and reports it as
// cached_tokens; the figures are the session's own usage as stored. The
// bill is the model's, so the store is the in-process one.

// BillTurns is the length of each conversation.
const BillTurns = 120

// BillScenario is one kind of conversation.
type BillScenario struct {
	Name    string         `json:"name"`
	Context map[string]any `json:"context"` // the session's memory settings
	// Learns: the model learns facts as the user talks (Many: past the
	// block's cap).
	Learns bool `json:"learns"`
	Many   bool `json:"many"`
	// Others: the user has this many earlier sessions (for recall "all").
	Others int  `json:"others"`
	Embed  bool `json:"embed"`
	Target float64
}

// BillRow is one scenario in one order.
type BillRow struct {
	Scenario string  `json:"scenario"`
	Legacy   bool    `json:"legacyOrder"`
	Prompt   int     `json:"promptTokens"`
	Cached   int     `json:"cachedTokens"`
	Share    float64 `json:"cacheableShare"`
	// Input dollars at gpt-4o-mini's and gpt-5's list prices, with the
	// cache and without it.
	Mini, MiniNoCache, Five, FiveNoCache float64
	Target                               float64 `json:"target"`
	// What the model requests carried, as the test model received them:
	// turns with recalled excerpts, and turns with learned facts.
	RecallTurns int `json:"recallTurns"`
	FactTurns   int `json:"factTurns"`
	// requests are the session's chat requests as the test model received
	// them, and uses what its cache made of each.
	requests []openai.ChatCompletionRequest
	uses     []llmtest.CacheUse
}

// billSeen counts what the chat requests carried.
type billSeen struct{ recall, facts atomic.Int64 }

// RunBill runs every scenario in both orders.
func RunBill(ctx context.Context, turns int) ([]BillRow, error) {
	tok, err := history.NewTikToken()
	if err != nil {
		return nil, err
	}
	var rows []BillRow
	for _, sc := range BillScenarios() {
		for _, legacy := range []bool{true, false} {
			r, err := runBillScenario(ctx, sc, legacy, turns, tok)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sc.Name, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// BillScenarios are the issue's: defaults, recall, learning, strategies.
func BillScenarios() []BillScenario {
	return []BillScenario{
		{Name: "defaults (summary_buffer)", Target: 0.90},
		{Name: "summary_buffer, 4,000-token budget", Context: map[string]any{"budgetTokens": 4000}, Target: 0.75},
		// At the default budget the whole conversation is in the context
		// and recall adds nothing of it (it skips what is sent already):
		// over 120 turns at defaults, "all" recalled on 3 turns.
		{Name: `recall "session", 16,000-token budget`, Context: map[string]any{"recall": "session", "budgetTokens": 16000}, Embed: true, Target: 0.90},
		// At the default budget this session's own exchanges, all in the
		// context, crowd the earlier sessions' out of the recall's hits.
		{Name: `recall "all", 16,000-token budget`, Context: map[string]any{"recall": "all", "budgetTokens": 16000}, Embed: true, Others: 6, Target: 0.90},
		{Name: "window, 10 exchanges", Context: map[string]any{"strategy": "window"}, Target: 0.85},
		{Name: "token_buffer (default budget 8,000)", Context: map[string]any{"strategy": "token_buffer", "budgetTokens": 8000}, Target: 0.85},
		{Name: "learns facts", Learns: true, Embed: true, Target: 0.90},
		{Name: "learns facts past the block's cap", Learns: true, Many: true, Embed: true, Target: 0.90},
	}
}

// runBillScenario runs one conversation.
func runBillScenario(ctx context.Context, sc BillScenario, legacy bool, turns int, tok *history.TikToken) (BillRow, error) {
	model := llmtest.Start()
	defer model.Close()
	model.SetCounter(tok)
	var learned atomic.Int64
	var seen billSeen
	model.SetReply(billReplies(sc, &learned, &seen))
	cfg := app.Config{ChatModel: "gpt-4o-mini", SystemPrompt: "You are a helpful assistant.", MaxSessionMessages: 1 << 20,
		ModelTimeout: time.Minute, ContextStrategy: "summary_buffer", WindowExchanges: 10, LongTermMemory: true, Embeddings: sc.Embed, MaxBodyBytes: 1 << 20, ReadTimeout: time.Minute}
	service := llm.NewOpenAI("bench", model.BaseURL(), nil)
	deps := app.Deps{Store: inprocdb.New(), Model: service, Tokens: tok, Auth: billAuth{},
		Log: slog.New(slog.DiscardHandler), Now: time.Now}
	if sc.Embed {
		deps.Embedder = llm.NewEmbeddings(service, llm.DefaultEmbeddingModel, llm.DefaultEmbeddingDimensions)
	}
	a := app.New(cfg, deps)
	a.Chat.Runner = chat.Now{} // each turn's job done before the next turn: summaries land in the same order every run
	a.Chat.LegacyOrder = legacy
	clients, stop, err := serve(a.Handler(), 1)
	if err != nil {
		return BillRow{}, err
	}
	defer stop()
	c := clients[0]
	for i := range sc.Others {
		if _, err := c.seedSession(ctx, "bill-user", "active", i, 20); err != nil {
			return BillRow{}, err
		}
	}
	var s struct{ ID string }
	if err := c.call(ctx, "bill-user", "POST", "/sessions", map[string]any{"memory": billSettings(sc, legacy)}, &s, http.StatusCreated); err != nil {
		return BillRow{}, err
	}
	for i := range turns {
		body := map[string]any{"sessionId": s.ID, "message": billMessage(sc, i)}
		if err := c.call(ctx, "bill-user", "POST", "/chat", body, nil, http.StatusOK); err != nil {
			return BillRow{}, fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	var got struct {
		Usage struct {
			PromptTokens       int `json:"promptTokens"`
			CachedPromptTokens int `json:"cachedPromptTokens"`
		}
	}
	if err := c.call(ctx, "bill-user", "GET", "/sessions/"+s.ID, nil, &got, http.StatusOK); err != nil {
		return BillRow{}, err
	}
	u := chat.ModelTokens{Input: got.Usage.PromptTokens, Cached: got.Usage.CachedPromptTokens}
	mini, five := chat.ListPrice("gpt-4o-mini"), chat.ListPrice("gpt-5")
	if err := billAgrees(ctx, c, u, mini); err != nil {
		return BillRow{}, err
	}
	reqs, uses := sessionRequests(model, s.ID)
	return BillRow{requests: reqs, uses: uses, Scenario: sc.Name, Legacy: legacy, Prompt: u.Input, Cached: u.Cached, Share: float64(u.Cached) / float64(max(u.Input, 1)),
		Mini: mini.InputDollars(u, false), MiniNoCache: mini.InputDollars(u, true), Five: five.InputDollars(u, false), FiveNoCache: five.InputDollars(u, true),
		Target: sc.Target, RecallTurns: int(seen.recall.Load()), FactTurns: int(seen.facts.Load())}, nil
}

// sessionRequests are the chat requests model received under key, with
// what its cache made of each.
func sessionRequests(model *llmtest.Server, key string) ([]openai.ChatCompletionRequest, []llmtest.CacheUse) {
	all, uses := model.Requests(), model.CacheUses()
	var reqs []openai.ChatCompletionRequest
	var out []llmtest.CacheUse
	for i, u := range uses {
		if u.Key == key && i < len(all) {
			reqs, out = append(reqs, all[i]), append(out, u)
		}
	}
	return reqs, out
}

// billAgrees checks that GET /usage shows the session's input, cached
// input and, at price, dollars as the bench counts them (the user's only
// replies are the session's).
func billAgrees(ctx context.Context, c *apiClient, u chat.ModelTokens, price chat.Price) error {
	var got struct {
		Models  map[string]chat.ModelBill
		Dollars float64
	}
	if err := c.call(ctx, "bill-user", "GET", "/usage", nil, &got, http.StatusOK); err != nil {
		return err
	}
	b := got.Models["gpt-4o-mini"]
	output := price.Dollars(chat.ModelTokens{Output: b.Output})
	if b.Input != u.Input || b.Cached != u.Cached || b.Uncached != u.Input-u.Cached || b.Dollars == nil ||
		math.Abs(*b.Dollars-output-price.InputDollars(u, false)) > 1e-9 || math.Abs(got.Dollars-*b.Dollars) > 1e-9 {
		return fmt.Errorf("/usage shows %+v ($%v of $%.6f), the session's usage %+v", b.ModelTokens, b.Dollars, got.Dollars, u)
	}
	return nil
}

// billSettings are the session's memory settings in sc; the baseline
// (today's order) also trims as before: one exchange at a time, and
// compactions half as deep ("trim": "each").
func billSettings(sc BillScenario, legacy bool) map[string]any {
	out := map[string]any{}
	for k, v := range sc.Context {
		out[k] = v
	}
	if legacy {
		out["trim"] = "each"
	}
	return out
}

// billAuth takes a bearer token as the user's id.
type billAuth struct{}

func (billAuth) Verify(_ context.Context, token string) (string, error) { return token, nil }

// billMessage is the user's i-th message: a paragraph on one of a few
// topics, with words of its own; where sc recalls, it also comes back to
// an earlier message (of this session, or of an earlier one), so that
// recall has something to find.
func billMessage(sc BillScenario, i int) string {
	topics := []string{"the garden", "a trip to Lisbon", "the Go service", "a birthday party", "the reading list"}
	text := fmt.Sprintf("Message %d, about %s. %s", i+1, topics[i%len(topics)], words(i*7+3, 60))
	switch sc.Context["recall"] {
	case "session":
		j := i / 3
		text += fmt.Sprintf(" Back to message %d, about %s: %s", j+1, topics[j%len(topics)], words(j*7+3, 20))
	case "all":
		text += fmt.Sprintf(" As in active session %d, message %d: a sentence or two of ordinary conversation.", i%max(sc.Others, 1), i%20)
	}
	return text
}

// billReplies answers chat turns with a reply of about 150 words, and
// learning requests with facts when the scenario learns (three new facts
// an extraction; twelve longer ones past the cap).
func billReplies(sc BillScenario, learned *atomic.Int64, seen *billSeen) func(openai.ChatCompletionRequest) llmtest.Response {
	return func(r openai.ChatCompletionRequest) llmtest.Response {
		switch r.Messages[0].Content {
		case prompts.Extract:
			if !sc.Learns {
				return llmtest.Response{Content: `{"profile":null,"facts":[]}`}
			}
			n, size := 3, 12
			if sc.Many {
				n, size = 12, 30
			}
			var facts []string
			for range n {
				k := learned.Add(1)
				facts = append(facts, fmt.Sprintf(`{"content":%q,"category":"preference","confidence":%.3f}`,
					fmt.Sprintf("The user noted item %d: %s.", k, words(int(k)*13+1, size)), 0.75+float64(k%20)/100))
			}
			return llmtest.Response{Content: `{"profile":null,"facts":[` + strings.Join(facts, ",") + `]}`}
		case prompts.Resolve:
			return llmtest.Response{Content: `{"decisions":[]}`}
		}
		seen.count(r)
		last := r.Messages[len(r.Messages)-1].Content
		return llmtest.Response{Content: "Here is what I think. " + words(len(last)+len(r.Messages), 150)}
	}
}

// count notes what a chat request carries.
func (s *billSeen) count(r openai.ChatCompletionRequest) {
	var all strings.Builder
	for _, m := range r.Messages {
		if m.Role == openai.ChatMessageRoleSystem {
			all.WriteString(m.Content)
		}
	}
	if strings.Contains(all.String(), "Excerpts recalled from") {
		s.recall.Add(1)
	}
	if strings.Contains(all.String(), "The user noted item") {
		s.facts.Add(1)
	}
}

// WriteBillFiles writes rows to dir as bill.json and bill.md.
func WriteBillFiles(dir string, rows []BillRow) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bill.json"), data, 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The model bill\n\n%d-turn conversations through POST /chat; cacheable share = cached_tokens / prompt_tokens of the replies, as the test model reports them by OpenAI's rule (see docs/context.md).\n\n", BillTurns)
	WriteBill(&b, rows)
	return os.WriteFile(filepath.Join(dir, "bill.md"), b.Bytes(), 0o644)
}

// WriteBill writes rows as a table.
func WriteBill(w io.Writer, rows []BillRow) {
	fmt.Fprintf(w, "| scenario | order | input tokens | cached | cacheable share | target | gpt-4o-mini input $ (no cache) | gpt-5 input $ (no cache) | turns with recall / facts |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		order := "cache order"
		if r.Legacy {
			order = "before (baseline)"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.1f%% | %.0f%% | $%.3f ($%.3f) | $%.3f ($%.3f) | %d / %d |\n",
			r.Scenario, order, r.Prompt, r.Cached, 100*r.Share, 100*r.Target, r.Mini, r.MiniNoCache, r.Five, r.FiveNoCache, r.RecallTurns, r.FactTurns)
	}
}
