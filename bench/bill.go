package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
}

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
		{Name: `recall "session"`, Context: map[string]any{"recall": "session"}, Embed: true, Target: 0.90},
		{Name: `recall "all"`, Context: map[string]any{"recall": "all"}, Embed: true, Others: 6, Target: 0.90},
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
	model.SetReply(billReplies(sc, &learned))
	cfg := app.Config{ChatModel: "gpt-4o-mini", SystemPrompt: "You are a helpful assistant.", MaxSessionMessages: 1 << 20,
		ModelTimeout: time.Minute, ContextStrategy: "summary_buffer", WindowExchanges: 10, LongTermMemory: true, Embeddings: sc.Embed, MaxBodyBytes: 1 << 20, ReadTimeout: time.Minute}
	service := llm.NewOpenAI("bench", model.BaseURL(), nil)
	deps := app.Deps{Store: inprocdb.New(), Model: service, Tokens: tok, Auth: billAuth{},
		Log: slog.New(slog.DiscardHandler), Now: time.Now}
	if sc.Embed {
		deps.Embedder = llm.NewEmbeddings(service, llm.DefaultEmbeddingModel, llm.DefaultEmbeddingDimensions)
	}
	a := app.New(cfg, deps)
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
	if err := c.call(ctx, "bill-user", "POST", "/sessions", map[string]any{"memory": sc.Context}, &s, http.StatusCreated); err != nil {
		return BillRow{}, err
	}
	for i := range turns {
		body := map[string]any{"sessionId": s.ID, "message": billMessage(i)}
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
	return BillRow{Scenario: sc.Name, Legacy: legacy, Prompt: u.Input, Cached: u.Cached, Share: float64(u.Cached) / float64(max(u.Input, 1)),
		Mini: mini.InputDollars(u, false), MiniNoCache: mini.InputDollars(u, true), Five: five.InputDollars(u, false), FiveNoCache: five.InputDollars(u, true),
		Target: sc.Target}, nil
}

// billAuth takes a bearer token as the user's id.
type billAuth struct{}

func (billAuth) Verify(_ context.Context, token string) (string, error) { return token, nil }

// billMessage is the user's i-th message: a paragraph on one of a few
// topics, with words of its own.
func billMessage(i int) string {
	topics := []string{"the garden", "a trip to Lisbon", "the Go service", "a birthday party", "the reading list"}
	return fmt.Sprintf("Message %d, about %s. %s", i+1, topics[i%len(topics)], words(i*7+3, 60))
}

// billReplies answers chat turns with a reply of about 150 words, and
// learning requests with facts when the scenario learns (three new facts
// an extraction; twelve longer ones past the cap).
func billReplies(sc BillScenario, learned *atomic.Int64) func(openai.ChatCompletionRequest) llmtest.Response {
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
		last := r.Messages[len(r.Messages)-1].Content
		return llmtest.Response{Content: "Here is what I think. " + words(len(last)+len(r.Messages), 150)}
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
	fmt.Fprintf(w, "| scenario | order | input tokens | cached | cacheable share | target | gpt-4o-mini input $ (no cache) | gpt-5 input $ (no cache) |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		order := "cache order"
		if r.Legacy {
			order = "before (baseline)"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.1f%% | %.0f%% | $%.3f ($%.3f) | $%.3f ($%.3f) |\n",
			r.Scenario, order, r.Prompt, r.Cached, 100*r.Share, 100*r.Target, r.Mini, r.MiniNoCache, r.Five, r.FiveNoCache)
	}
}
