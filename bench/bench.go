// Package bench measures what a chat turn costs as a conversation grows:
// Firestore documents read and written, round trips and the latency of the
// backend path, for this backend and, in the same run, for a baseline that
// does what the common design does (read the whole history every turn,
// append with separate writes). It runs against the Firestore emulator with
// the model replaced by an OpenAI-compatible server that answers at once, so
// the figures are the backend's own. Counts come from a gRPC counter on the
// real client; the emulator's times are not production Firestore's.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// Config sizes a run.
type Config struct {
	Turns           int           // turns of the long session, for both sides
	Bands           [][2]int      // 1-based, inclusive turn ranges to report
	Concurrency     []int         // sessions chatting at once, for throughput
	TurnsPerSession int           // turns each of those sessions runs
	Budget          int           // the long session's context budget in tokens
	TokenizerCorpus int           // messages counted for tokenizer throughput
	HotspotTurns    int           // concurrent turns of one user vs as many users
	DraftReply      time.Duration // how long the reply of the draft intervals' measurement streams; 0: none
	PruningTurns    int           // turns of the tool-heavy session, pruning on and off
	UpkeepExchanges int           // exchanges of the session message retention trims
	UpkeepSessions  int           // sessions behind the rolled-up history
	// Repeats more conversations of each design run side by side up to
	// RepeatTurns (the short bands' end), so that the p50s of the bands
	// they reach are over Repeats+1 conversations' turns, not one's.
	Repeats, RepeatTurns int
	// EmbeddingCalls counts the model server's embedding requests; nil:
	// no recall run. Set by whoever runs the model server.
	EmbeddingCalls func() int64 `json:"-"`
	// Embedders are measured on the recall fixture (the offline stand-in,
	// and a real embedding model when one is configured).
	Embedders []recall.Embedder `json:"-"`
	// SearchUsers users' SearchUnits exchanges each, seeded through the
	// API, for a search's latency on the emulator.
	SearchUsers, SearchUnits int
	// Conversations is how many conversations each part of the conversation
	// fixture has; 0: the whole fixture (what the fusion was chosen on).
	Conversations int
}

// Full is `make bench`.
func Full() Config {
	return Config{Turns: 1000, Bands: [][2]int{{1, 10}, {91, 100}, {491, 500}, {991, 1000}}, Repeats: 4, RepeatTurns: 100,
		Concurrency: []int{1, 10, 50}, TurnsPerSession: 20, Budget: 4000, TokenizerCorpus: 20000, HotspotTurns: 20, DraftReply: StreamedReply, PruningTurns: pruningTurns,
		UpkeepExchanges: 500, UpkeepSessions: 40, SearchUsers: 10, SearchUnits: 3000}
}

// Tiny proves the harness works, in seconds.
func Tiny() Config {
	return Config{Turns: 12, Bands: [][2]int{{1, 4}, {9, 12}}, Repeats: 1, RepeatTurns: 4, Concurrency: []int{1, 3},
		TurnsPerSession: 3, Budget: 600, TokenizerCorpus: 200, HotspotTurns: 4, DraftReply: time.Second, PruningTurns: 12,
		UpkeepExchanges: 20, UpkeepSessions: 6, SearchUsers: 1, SearchUnits: 100, Conversations: 1}
}

// Sample is one turn.
type Sample struct {
	Turn          int     `json:"turn"`
	Reads         int64   `json:"reads"`
	Writes        int64   `json:"writes"`
	Deletes       int64   `json:"deletes"`
	RoundTrips    int64   `json:"roundTrips"`            // the whole turn, after-turn work included
	BeforeModel   int64   `json:"roundTripsBeforeModel"` // until the model is called
	Bytes         int64   `json:"bytesWritten"`
	LatencyMs     float64 `json:"latencyMs"` // backend path: the turn minus the model call
	TTFTMs        float64 `json:"ttftMs"`    // request to first streamed token, with a model answering at once
	Tokenizations int64   `json:"tokenizations"`
}

// Band summarizes the turns From..To.
type Band struct {
	From          int     `json:"from"`
	To            int     `json:"to"`
	Reads         float64 `json:"readsPerTurn"`
	Writes        float64 `json:"writesPerTurn"`
	Deletes       float64 `json:"deletesPerTurn"`
	RoundTrips    float64 `json:"roundTripsPerTurn"`
	P50Ms         float64 `json:"p50Ms"`
	P95Ms         float64 `json:"p95Ms"`
	Tokenizations float64 `json:"tokenizationsPerTurn"`
	BeforeP50     float64 `json:"roundTripsBeforeModelP50"`
	BeforeMax     float64 `json:"roundTripsBeforeModelMax"`
	Bytes         float64 `json:"bytesWrittenPerTurn"`
	TTFTP50       float64 `json:"ttftP50Ms"`
}

// Side is one design's run.
type Side struct {
	Name    string   `json:"name"`
	Bands   []Band   `json:"bands"`
	Samples []Sample `json:"samples"`
	// Repeats are the turns of the conversations run besides the long
	// one (see Config.Repeats); the bands count them too.
	Repeats []Sample `json:"repeats,omitempty"`
}

// Throughput is concurrent sessions' turns per second.
type Throughput struct {
	Sessions       int     `json:"sessions"`
	Turns          int     `json:"turns"`
	TurnsPerSecond float64 `json:"turnsPerSecond"`
	P95Ms          float64 `json:"p95Ms"`
}

// Report is a whole run.
type Report struct {
	Machine    string       `json:"machine"`
	Started    time.Time    `json:"started"`
	Config     Config       `json:"config"`
	Project    Side         `json:"project"`
	Baseline   Side         `json:"baseline"`
	Throughput []Throughput `json:"throughput"`
	// Amortized is the round trips of a conversation of AmortizedTurns
	// turns with default settings, everything included.
	Amortized struct {
		Turns   int     `json:"turns"`
		Median  float64 `json:"medianRoundTrips"`
		Mean    float64 `json:"meanRoundTrips"`
		Reads   float64 `json:"readsPerTurn"`
		Writes  float64 `json:"writesPerTurn"`
		Deletes float64 `json:"deletesPerTurn"`
	} `json:"amortized"`
	LargestDocBytes int64            `json:"largestDocumentBytes"` // of any document the project wrote
	Drafts          []DraftRun       `json:"drafts"`
	MemoryPath      *MemoryPath      `json:"memoryPath"`
	Recall          *RecallRun       `json:"recall"`
	Quality         []*Quality       `json:"recallQuality"`
	Search          []*SearchQuality `json:"searchQuality"`
	SearchCost      *SearchCost      `json:"searchCost"`
	Conversations   []*SearchQuality `json:"conversationQuality"`
	Calibration     []FusionTrial    `json:"fusionCalibration"`
	HeldOutReach    *[2]FusionTrial  `json:"heldOutReach"` // the grid's best on held-out, and DefaultFusion's there
	SearchScale     *SearchScale     `json:"searchScale"`
	Pruning         *PruningRun      `json:"toolOutputPruning"`
	Uploads         *UploadRun       `json:"uploads,omitempty"`
	Upkeep          *UpkeepRun       `json:"upkeep"`
	Hotspot         Hotspot          `json:"hotspot"`
	Tokenizer       struct {
		MessagesPerSecond float64 `json:"messagesPerSecond"`
		// ContextBuildTokenizations counts tokenizer calls while building
		// contexts from stored history: zero by design.
		ContextBuildTokenizations int64 `json:"contextBuildTokenizations"`
	} `json:"tokenizer"`
	Notes []string `json:"notes"`
}

// Hotspot compares N concurrent turns of one user (in N sessions) with
// those of N users.
type Hotspot struct {
	Turns               int     `json:"turns"`
	ManyUsersMs         float64 `json:"manyUsersMs"`
	OneUserMs           float64 `json:"oneUserMs"`
	ManyUsersRoundTrips int64   `json:"manyUsersRoundTrips"`
	OneUserRoundTrips   int64   `json:"oneUserRoundTrips"`
}

// AmortizedTurns is how many turns the amortized cost covers.
const AmortizedTurns = 300

// countingTokens counts how often messages are tokenized.
type countingTokens struct {
	*history.TikToken
	calls atomic.Int64
}

func (c *countingTokens) Count(model string, m *history.Message) int {
	c.calls.Add(1)
	return c.TikToken.Count(model, m)
}

// timedModel measures the model call, to take it out of the backend path,
// and notes what Firestore had done when it was called.
type timedModel struct {
	chat.Model
	counter *firestoretest.Counter
	mu      sync.Mutex
	last    time.Duration
	atCall  firestoretest.Counts
	// seen, if set, sees each request (before it is answered).
	seen func(chat.Request)
}

func (t *timedModel) Generate(ctx context.Context, req chat.Request, onDelta func(string)) (*chat.Reply, error) {
	if t.seen != nil {
		t.seen(req)
	}
	at := t.counter.Snapshot()
	start := time.Now()
	r, err := t.Model.Generate(ctx, req, onDelta)
	t.mu.Lock()
	t.last, t.atCall = time.Since(start), at
	t.mu.Unlock()
	return r, err
}

// call returns the duration of the last call and the counts when it began.
func (t *timedModel) call() (time.Duration, firestoretest.Counts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last, t.atCall
}

// Reply is the model of a run, answering at once: about 60 words for a
// turn, a short summary for a summary request, one new fact for each
// long-term memory extraction (so facts grow to their cap as they would).
func Reply(r openai.ChatCompletionRequest) string {
	system := ""
	if len(r.Messages) > 0 {
		system = r.Messages[0].Content
	}
	if d := streamed(r); d > 0 {
		return words(1, int(d/streamedChunk)+1)
	}
	switch system {
	case prompts.Summary:
		return "So far the user planned a trip: trains, hotels, museums, a day by the sea; open questions on budget and dates."
	case prompts.Extract:
		n := len(r.Messages[len(r.Messages)-1].Content)
		return fmt.Sprintf(`{"profile":{"work":null,"personal":null,"focus":"Planning trip number %d."},"facts":[{"content":"The user asked about itinerary variant %d.","category":"project","confidence":0.9}]}`, n, n)
	case prompts.Resolve: // the candidate is new: facts grow to the cap
		return `{"decisions":[{"candidate":1,"decision":"new"}]}`
	}
	return words(len(r.Messages), 60)
}

// Run measures. model is an OpenAI-compatible base URL answering at once.
func Run(ctx context.Context, cfg Config, modelURL string, log func(string, ...any)) (*Report, error) {
	rep := &Report{Started: time.Now().UTC(), Config: cfg,
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s; Firestore emulator on loopback", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}
	tok, err := history.NewTikToken()
	if err != nil {
		return nil, err
	}
	log("warming up the emulator")
	if err := warmUp(ctx, cfg, modelURL, tok); err != nil {
		return nil, err
	}
	log("project and baseline: %d turns of one session each, alternating", cfg.Turns)
	if rep.Project, rep.Baseline, err = runSideBySide(ctx, cfg, modelURL, tok, rep); err != nil {
		return nil, err
	}
	log("defaults: %d turns of a session with default settings", min(AmortizedTurns, cfg.Turns))
	if err := runDefaults(ctx, cfg, modelURL, tok, rep); err != nil {
		return nil, err
	}
	for _, n := range cfg.Concurrency {
		log("throughput: %d sessions at once", n)
		tp, err := runThroughput(ctx, cfg, modelURL, tok, n)
		if err != nil {
			return nil, err
		}
		rep.Throughput = append(rep.Throughput, tp)
	}
	log("hotspot: %d turns at once, of %d users and of one", cfg.HotspotTurns, cfg.HotspotTurns)
	if rep.Hotspot, err = runHotspot(ctx, modelURL, tok, cfg.HotspotTurns); err != nil {
		return nil, err
	}
	log("memory path: %d turns of GET context and POST messages, against one document", cfg.Turns)
	if rep.MemoryPath, err = runMemoryPath(ctx, cfg, modelURL, tok); err != nil {
		return nil, err
	}
	if cfg.EmbeddingCalls != nil {
		log("recall: %d turns each without embeddings, with them, and with recall on", recallTurns)
		if rep.Recall, err = runRecall(ctx, modelURL, tok, cfg.EmbeddingCalls); err != nil {
			return nil, err
		}
	}
	log("upkeep: message retention over %d exchanges, history roll-ups over %d sessions", cfg.UpkeepExchanges, cfg.UpkeepSessions)
	if rep.Upkeep, err = runUpkeep(ctx, modelURL, tok, cfg.UpkeepExchanges, cfg.UpkeepSessions); err != nil {
		return nil, err
	}
	log("tool-output pruning: %d turns of a tool-heavy session, pruning on and off", cfg.PruningTurns)
	if rep.Pruning, err = runPruning(ctx, modelURL, tok, cfg.PruningTurns); err != nil {
		return nil, err
	}
	for _, e := range cfg.Embedders {
		log("recall quality: %s on the fixture", e.Model())
		q, err := MeasureQuality(ctx, e, tok)
		if err != nil {
			return nil, fmt.Errorf("recall quality of %s: %w", e.Model(), err)
		}
		rep.Quality = append(rep.Quality, q)
	}
	if len(cfg.Embedders) > 0 {
		if err := runSearch(ctx, cfg, tok, rep, log); err != nil {
			return nil, err
		}
	}
	if cfg.DraftReply > 0 {
		log("drafts: a reply streaming for %s at each draft interval", cfg.DraftReply)
		if rep.Drafts, err = runDrafts(ctx, modelURL, tok, cfg.DraftReply); err != nil {
			return nil, err
		}
	}
	log("attachments: one upload of each kind of file")
	if rep.Uploads, err = runUploads(ctx, tok); err != nil {
		return nil, fmt.Errorf("uploads: %w", err)
	}
	rep.Tokenizer.MessagesPerSecond = tokenizerRate(tok, cfg.TokenizerCorpus)
	rep.Notes = []string{
		"Counts come from a gRPC interceptor on the real Firestore client and transfer to production; times are the emulator's on this machine and do not.",
		"Project turns include the after-turn work (summaries), so compaction turns are in the averages.",
		"Latency is the backend path: the whole turn minus the model call (an in-process server answering at once); time to first token is from the turn's start to the first streamed piece of the reply.",
		"Both designs run 150 turns, alternating, to warm the emulator's JVM up before anything is measured, then alternate turn by turn; the hotspot times are medians of five alternating rounds.",
		fmt.Sprintf("Besides the long conversation, each design runs %d more of %d turns (side by side, and on the memory path too), so the bands up to turn %d count %d conversations' turns: a p50 of one conversation's 10 turns moved by half between runs.", cfg.Repeats, cfg.RepeatTurns, cfg.RepeatTurns, cfg.Repeats+1),
		"The project runs with its defaults: long-term memory on, 20 turns a minute per user (the run's clock moves a minute per turn), so every turn reads its rate-limit slots and memory block.",
	}
	return rep, nil
}

// runDefaults runs a conversation of up to AmortizedTurns turns on a
// session with default settings and records its round trips per turn,
// everything included: the amortized cost of a turn.
func runDefaults(ctx context.Context, cfg Config, modelURL string, tok *history.TikToken, rep *Report) error {
	a, err := newApp(ctx, modelURL, tok, fmt.Sprintf("bench-defaults-%d", time.Now().UnixNano()))
	if err != nil {
		return err
	}
	defer a.close()
	s, err := a.app.Sessions.Create(ctx, "bench-user", sessions.CreateInput{})
	if err != nil {
		return err
	}
	var rts []float64
	for turn := 1; turn <= min(AmortizedTurns, cfg.Turns); turn++ {
		a.clock.advance(time.Minute)
		before := a.counter.Snapshot()
		_, err := a.app.Chat.Turn(ctx, chat.TurnRequest{UserID: "bench-user", SessionID: s.ID,
			Message: fmt.Sprintf("Turn %d: %s", turn, words(turn, 40)), ClientMessageID: fmt.Sprint("t", turn)})
		if err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		d := a.counter.Snapshot().Sub(before)
		rts = append(rts, float64(d.RoundTrips))
		rep.Amortized.Mean += float64(d.RoundTrips)
		rep.Amortized.Reads += float64(d.Reads)
		rep.Amortized.Writes += float64(d.Writes)
		rep.Amortized.Deletes += float64(d.Deletes)
	}
	rep.Amortized.Turns = len(rts)
	n := float64(max(1, len(rts)))
	rep.Amortized.Mean /= n
	rep.Amortized.Reads /= n
	rep.Amortized.Writes /= n
	rep.Amortized.Deletes /= n
	rep.Amortized.Median = percentile(rts, 50)
	return nil
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// newApp is the backend with its default limits and long-term memory on.
func newApp(ctx context.Context, modelURL string, tok *history.TikToken, project string, configure ...func(*app.Config)) (*benchApp, error) {
	counter := &firestoretest.Counter{}
	client, err := firestoretest.Dial(ctx, project, counter)
	if err != nil {
		return nil, err
	}
	tokens := &countingTokens{TikToken: tok}
	service := llm.NewOpenAI("bench", modelURL, nil)
	model := &timedModel{Model: service, counter: counter}
	clk := &clock{}
	cfg := app.Config{ChatModel: "gpt-4o-mini", SystemPrompt: "You are a helpful assistant.",
		MaxSessionMessages: 1 << 20, ModelTimeout: time.Minute, ContextStrategy: "summary_buffer", WindowExchanges: 10, LongTermMemory: true,
		TurnsPerMinute: app.DefaultTurnsPerMinute, MessagesPerMinute: app.DefaultMessagesPerMinute}
	for _, c := range configure {
		c(&cfg)
	}
	var embedder recall.Embedder // as deployed when cfg.Embeddings is set
	if cfg.Embeddings {
		embedder = llm.NewEmbeddings(service, llm.DefaultEmbeddingModel, llm.DefaultEmbeddingDimensions)
	}
	a := app.New(cfg, app.Deps{Store: app.Firestore(client), Model: model, Embedder: embedder, Tokens: tokens,
		Log: slog.New(slog.DiscardHandler), Now: clk.Now})
	// Each turn's counts include the work after its reply (its job), done
	// before the next turn as a user who reads the reply first would see it.
	a.Chat.Runner = chat.Now{}
	return &benchApp{app: a, counter: counter, tokens: tokens, model: model, clock: clk, close: func() { client.Close() }}, nil
}

type benchApp struct {
	app     *app.App
	counter *firestoretest.Counter
	tokens  *countingTokens
	model   *timedModel
	clock   *clock
	close   func()
}

// clock is the app's clock: real time, moved on a minute per turn by the
// long run, so that the default turn limit applies as in production.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func tokenizerRate(tok *history.TikToken, n int) float64 {
	msgs := make([]history.Message, n)
	for i := range msgs {
		msgs[i] = history.Message{Role: history.RoleUser, Content: words(i, 20+i%80)}
	}
	start := time.Now()
	for i := range msgs {
		tok.Count("gpt-4o-mini", &msgs[i])
	}
	return float64(n) / time.Since(start).Seconds()
}

// words makes deterministic filler text of about n words.
func words(seed, n int) string {
	vocab := strings.Fields("the plan for the trip includes trains hotels museums and a day by the sea with friends " +
		"budget dates weather packing list restaurants tickets reservations questions answers notes ideas")
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(vocab[(seed*7+i*13)%len(vocab)])
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

func bands(samples []Sample, ranges [][2]int) []Band {
	var out []Band
	for _, r := range ranges {
		b := Band{From: r[0], To: r[1]}
		var lats, before, ttft []float64
		n := 0.0
		for _, s := range samples {
			if s.Turn < r[0] || s.Turn > r[1] {
				continue
			}
			n++
			before = append(before, float64(s.BeforeModel))
			ttft = append(ttft, s.TTFTMs)
			b.Bytes += float64(s.Bytes)
			b.Reads += float64(s.Reads)
			b.Writes += float64(s.Writes)
			b.Deletes += float64(s.Deletes)
			b.RoundTrips += float64(s.RoundTrips)
			b.Tokenizations += float64(s.Tokenizations)
			lats = append(lats, s.LatencyMs)
		}
		if n == 0 {
			continue
		}
		b.Reads, b.Writes, b.Deletes, b.RoundTrips, b.Tokenizations, b.Bytes = b.Reads/n, b.Writes/n, b.Deletes/n, b.RoundTrips/n, b.Tokenizations/n, b.Bytes/n
		b.P50Ms, b.P95Ms = percentile(lats, 50), percentile(lats, 95)
		b.BeforeP50, b.BeforeMax, b.TTFTP50 = percentile(before, 50), percentile(before, 100), percentile(ttft, 50)
		out = append(out, b)
	}
	return out
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
