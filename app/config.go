package app

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chatmemory/backend/functions"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
)

// Config is everything the backend reads from its environment, parsed once
// at start-up. See README.md for each variable and its default.
type Config struct {
	Backend             string      // STORAGE_BACKEND: firestore (default) or inprocess ("memory", its former name, is read as inprocess)
	ProjectID           string      // GOOGLE_CLOUD_PROJECT (or GCLOUD_PROJECT)
	FirestoreEmulator   string      // FIRESTORE_EMULATOR_HOST
	AuthEmulator        string      // FIREBASE_AUTH_EMULATOR_HOST
	OnGoogleCloud       bool        // K_SERVICE or FUNCTION_TARGET set, or GOOGLE_APPLICATION_CREDENTIALS
	OpenAIKey           string      // OPENAI_API_KEY
	IDSecret            string      // ID_SECRET: the key ids derived from client keys are made under (Secret Manager in production)
	OpenAIBaseURL       string      // OPENAI_BASE_URL
	ChatModel           string      // CHAT_MODEL
	ChatModels          []ChatModel // CHAT_MODELS: the models sessions may choose, CHAT_MODEL first
	SystemPrompt        string      // SYSTEM_PROMPT
	InstructionsChars   int         // SESSION_INSTRUCTIONS_MAX_CHARS: a session's own instructions at most; 0: none
	AllowedOrigins      []string
	MaxBodyBytes        int64
	MaxSessionMessages  int
	TurnsPerMinute      int
	MessagesPerMinute   int
	SearchesPerMinute   int // RATE_SEARCHES_PER_MINUTE
	MaxToolRounds       int // MAX_TOOL_ROUNDS: replies with tool calls in a row before the model must answer in text
	TokensPerDay        int
	ContextBudget       int
	ContextStrategy     string // CONTEXT_STRATEGY (formerly MEMORY_STRATEGY, still read)
	WindowExchanges     int    // WINDOW_EXCHANGES
	ModelTimeout        time.Duration
	FirestoreTimeout    time.Duration // FIRESTORE_TIMEOUT_SECONDS: each Firestore operation
	AuthTimeout         time.Duration // AUTH_TIMEOUT_SECONDS: each ID-token check
	RevocationTTL       time.Duration // REVOCATION_CHECK_SECONDS: how long an account's revocation state is trusted
	DraftInterval       time.Duration // DRAFT_INTERVAL_MS: how often a streaming reply's partial text is saved
	OfflinePace         time.Duration // OFFLINE_PACE_MS: the offline stand-in's pause between streamed chunks
	ReadTimeout         time.Duration // READ_TIMEOUT_SECONDS: reading a request's body
	RetentionDays       [3]int        // RETENTION_ACTIVE_DAYS, RETENTION_ARCHIVED_DAYS, RETENTION_DELETED_DAYS
	MessageDays         int           // RETENTION_MESSAGE_DAYS: messages older than this are deleted; 0 (default) keeps them
	SweepBudget         time.Duration
	LongTermMemory      bool         // LONG_TERM_MEMORY: on (default) or off
	HistoryShare        int          // MEMORY_HISTORY_SHARE: percent of the memory block the episodic history may take (30)
	Embeddings          bool         // EMBEDDINGS: on (default) or off: exchanges embedded for search
	EmbeddingModel      string       // EMBEDDING_MODEL
	EmbeddingDimensions int          // EMBEDDING_DIMENSIONS: 1 to 2048
	WordVectors         string       // WORD_VECTORS: the offline stand-in's word vectors: auto (default), off, or a file
	SystemMessages      bool         // CLIENT_SYSTEM_MESSAGES: off (default) or on
	AppCheck            AppCheckMode // APP_CHECK: off (default), monitor or enforce
	AppCheckAppIDs      []string     // APP_CHECK_APP_IDS: if set, the only apps whose tokens are accepted
	TraceExporter       string       // TRACE_EXPORTER: off, stdout or cloudtrace (the default on Google Cloud)
	MetricsExporter     string       // METRICS_EXPORTER: off, stdout or cloudmonitoring (the default on Google Cloud)
	TraceSampleRatio    float64      // TRACE_SAMPLE_RATIO: share of new traces sampled, 0 to 1
	LogLevel            string
	MaxAttachmentBytes  int64  // MAX_ATTACHMENT_BYTES: one uploaded file at most (20 MB)
	AttachmentQuota     int64  // ATTACHMENT_QUOTA_BYTES: a user's stored attachments at most (1 GiB)
	UploadsPerMinute    int    // RATE_UPLOADS_PER_MINUTE: a user's uploads in a calendar minute (20; 0: no limit)
	ImageDetail         string // ATTACHMENT_IMAGE_DETAIL: the detail images are sent to the model at (auto, low or high)
	StorageBucket       string // STORAGE_BUCKET: the bucket attachments live in (the project's default Firebase bucket)
	StorageEmulator     string // STORAGE_EMULATOR_HOST: a Cloud Storage emulator (make dev starts one)
}

// MinIDSecret is the fewest characters ID_SECRET may have.
const MinIDSecret = ids.MinSecretLen

// ChatModel is a model sessions may choose, with its context size in
// tokens (as GET /models answers it).
type ChatModel = functions.ChatModel

// AppCheckMode is how App Check tokens are checked (see functions.AppCheck).
type AppCheckMode = functions.AppCheckMode

// The App Check modes.
const (
	AppCheckOff     = functions.AppCheckOff
	AppCheckMonitor = functions.AppCheckMonitor
	AppCheckEnforce = functions.AppCheckEnforce
)

// Defaults.
const (
	DefaultChatModel          = "gpt-4o-mini"
	DefaultSystemPrompt       = "You are a helpful assistant."
	DefaultMaxBodyBytes       = 1 << 20
	DefaultMaxSessionMessages = 10_000
	DefaultTurnsPerMinute     = 20
	DefaultMessagesPerMinute  = 120
	DefaultSearchesPerMinute  = 30
	DefaultTokensPerDay       = 500_000
	DefaultModelTimeout       = 60 * time.Second
	DefaultFirestoreTimeout   = 10 * time.Second
	DefaultAuthTimeout        = 5 * time.Second
	DefaultRevocationTTL      = 5 * time.Minute
	DefaultReadTimeout        = 30 * time.Second
)

// ConfigFromEnv reads the configuration with getenv (os.Getenv in
// production) and reports every problem it finds at once.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	env := &vars{getenv: getenv}
	c := readConfig(env)
	c.checkBackend(env)
	c.checkAccess(env)
	c.checkChoices(env)
	return c, env.err()
}

// readConfig reads each setting on its own: a malformed one is noted and
// read as its default. Every number is bounded, so no setting can overflow
// what is computed from it (budgets times percentages, seconds to
// durations).
func readConfig(env *vars) Config {
	const day, many = 24 * 60 * 60, 1_000_000_000
	c := Config{
		Backend:            env.str("STORAGE_BACKEND", "firestore"),
		ProjectID:          env.str("GOOGLE_CLOUD_PROJECT", env.str("GCLOUD_PROJECT", "")),
		FirestoreEmulator:  env.str("FIRESTORE_EMULATOR_HOST", ""),
		AuthEmulator:       env.str("FIREBASE_AUTH_EMULATOR_HOST", ""),
		OnGoogleCloud:      env.getenv("K_SERVICE") != "" || env.getenv("FUNCTION_TARGET") != "" || env.getenv("GOOGLE_APPLICATION_CREDENTIALS") != "",
		OpenAIKey:          env.str("OPENAI_API_KEY", ""),
		IDSecret:           env.str("ID_SECRET", ""),
		OpenAIBaseURL:      env.str("OPENAI_BASE_URL", ""),
		ChatModel:          env.str("CHAT_MODEL", DefaultChatModel),
		SystemPrompt:       env.str("SYSTEM_PROMPT", DefaultSystemPrompt),
		InstructionsChars:  env.num("SESSION_INSTRUCTIONS_MAX_CHARS", sessions.DefaultMaxInstructionsChars, 0, 100_000),
		AllowedOrigins:     env.list("CORS_ALLOWED_ORIGINS"),
		MaxBodyBytes:       int64(env.num("MAX_BODY_BYTES", DefaultMaxBodyBytes, 1024, 32<<20)),
		MaxSessionMessages: env.num("MAX_SESSION_MESSAGES", DefaultMaxSessionMessages, 0, many),
		TurnsPerMinute:     env.num("RATE_TURNS_PER_MINUTE", DefaultTurnsPerMinute, 0, chat.MaxTurnsPerMinute),
		MessagesPerMinute:  env.num("RATE_MESSAGES_PER_MINUTE", DefaultMessagesPerMinute, 0, many),
		SearchesPerMinute:  env.num("RATE_SEARCHES_PER_MINUTE", DefaultSearchesPerMinute, 0, many),
		MaxToolRounds:      env.num("MAX_TOOL_ROUNDS", chat.DefaultMaxToolRounds, 1, 100),
		TokensPerDay:       env.num("RATE_TOKENS_PER_DAY", DefaultTokensPerDay, 0, many),
		ContextBudget:      env.num("CONTEXT_TOKEN_BUDGET", 0, 0, sessions.MaxBudgetTokens),
		ContextStrategy:    env.str("CONTEXT_STRATEGY", env.str("MEMORY_STRATEGY", "summary_buffer")),
		WindowExchanges:    env.num("WINDOW_EXCHANGES", 10, 1, sessions.MaxWindowExchanges),
		ModelTimeout:       env.seconds("MODEL_TIMEOUT_SECONDS", DefaultModelTimeout, 1, 3600),
		FirestoreTimeout:   env.seconds("FIRESTORE_TIMEOUT_SECONDS", DefaultFirestoreTimeout, 1, 300),
		AuthTimeout:        env.seconds("AUTH_TIMEOUT_SECONDS", DefaultAuthTimeout, 1, 60),
		RevocationTTL:      env.seconds("REVOCATION_CHECK_SECONDS", DefaultRevocationTTL, 0, day),
		DraftInterval:      time.Duration(env.num("DRAFT_INTERVAL_MS", int(chat.DefaultDraftInterval/time.Millisecond), 100, 60_000)) * time.Millisecond,
		OfflinePace:        time.Duration(env.num("OFFLINE_PACE_MS", int(llm.DefaultOfflinePace/time.Millisecond), 0, 1000)) * time.Millisecond,
		ReadTimeout:        env.seconds("READ_TIMEOUT_SECONDS", DefaultReadTimeout, 1, 600),
		LogLevel:           env.str("LOG_LEVEL", "info"),
		RetentionDays: [3]int{env.num("RETENTION_ACTIVE_DAYS", 30, 1, sessions.MaxRetentionDays),
			env.num("RETENTION_ARCHIVED_DAYS", 90, 1, sessions.MaxRetentionDays), env.num("RETENTION_DELETED_DAYS", 30, 1, sessions.MaxRetentionDays)},
		MessageDays:         env.num("RETENTION_MESSAGE_DAYS", 0, 0, sessions.MaxRetentionDays),
		SweepBudget:         env.seconds("SWEEP_BUDGET_SECONDS", 480*time.Second, 10, day),
		LongTermMemory:      env.onOff("LONG_TERM_MEMORY", true),
		HistoryShare:        env.num("MEMORY_HISTORY_SHARE", 30, 0, 100),
		Embeddings:          env.onOff("EMBEDDINGS", true),
		EmbeddingModel:      env.str("EMBEDDING_MODEL", llm.DefaultEmbeddingModel),
		EmbeddingDimensions: env.num("EMBEDDING_DIMENSIONS", llm.DefaultEmbeddingDimensions, 1, recall.MaxDimensions),
		WordVectors:         env.str("WORD_VECTORS", "auto"),
		SystemMessages:      env.onOff("CLIENT_SYSTEM_MESSAGES", false),
		AppCheck:            AppCheckMode(env.str("APP_CHECK", string(AppCheckOff))),
		AppCheckAppIDs:      env.list("APP_CHECK_APP_IDS"),
		TraceSampleRatio:    env.ratio("TRACE_SAMPLE_RATIO", 1),
	}
	c.readFiles(env)
	// Exporters: off, stdout, or Google Cloud's (the default there).
	c.TraceExporter = env.exporter("TRACE_EXPORTER", TracesCloudTrace, c.OnGoogleCloud)
	c.MetricsExporter = env.exporter("METRICS_EXPORTER", MetricsCloudMonitoring, c.OnGoogleCloud)
	if models, err := parseModels(env.getenv("CHAT_MODELS"), c.ChatModel); err != nil {
		env.bad("%s", err.Error())
	} else {
		c.ChatModels = models
	}
	return c
}

// readFiles reads the settings of attachments.
func (c *Config) readFiles(env *vars) {
	c.MaxAttachmentBytes = int64(env.num("MAX_ATTACHMENT_BYTES", attachments.DefaultMaxBytes, 1024, 1<<30))
	c.AttachmentQuota = int64(env.num("ATTACHMENT_QUOTA_BYTES", attachments.DefaultQuota, 1024, 1<<40))
	c.UploadsPerMinute = env.num("RATE_UPLOADS_PER_MINUTE", attachments.DefaultPerMinute, 0, 1_000_000_000)
	c.ImageDetail = env.str("ATTACHMENT_IMAGE_DETAIL", chat.DefaultImageDetail)
	switch c.ImageDetail {
	case "auto", "low", "high":
	default:
		env.bad("ATTACHMENT_IMAGE_DETAIL must be auto, low or high, not %q", c.ImageDetail)
	}
	c.StorageEmulator = env.str("STORAGE_EMULATOR_HOST", "")
	c.StorageBucket = env.str("STORAGE_BUCKET", c.ProjectID+".firebasestorage.app")
}

// checkBackend checks that the storage backend is one there is, and can be
// reached from here ("memory", its former name, reads as inprocess).
func (c *Config) checkBackend(env *vars) {
	switch c.Backend {
	case "firestore":
		if c.FirestoreEmulator == "" && !c.OnGoogleCloud {
			env.bad("STORAGE_BACKEND=firestore needs FIRESTORE_EMULATOR_HOST (the emulator, e.g. 127.0.0.1:8080) or Google Cloud credentials; or set STORAGE_BACKEND=inprocess")
		}
	case "inprocess":
	case "memory":
		c.Backend = "inprocess"
	default:
		env.bad("STORAGE_BACKEND must be firestore or inprocess, not %q", c.Backend)
	}
	for name, addr := range map[string]string{"FIRESTORE_EMULATOR_HOST": c.FirestoreEmulator, "FIREBASE_AUTH_EMULATOR_HOST": c.AuthEmulator} {
		if addr != "" {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				env.bad("%s must be host:port, not %q", name, addr)
			}
		}
	}
}

// checkAccess checks what decides who is let in: the project whose ID
// tokens are accepted and a way to verify them, App Check, the key ids
// are derived under, and no emulator trusted where it must not be.
func (c *Config) checkAccess(env *vars) {
	if c.ProjectID == "" {
		env.bad("GOOGLE_CLOUD_PROJECT is not set: it names the Firebase project whose ID tokens are accepted")
	}
	if c.AuthEmulator == "" && !c.OnGoogleCloud {
		env.bad("FIREBASE_AUTH_EMULATOR_HOST is not set and there are no Google Cloud credentials: ID tokens cannot be verified")
	}
	switch c.AppCheck {
	case AppCheckOff, AppCheckMonitor, AppCheckEnforce:
	default:
		env.bad("APP_CHECK must be off, monitor or enforce, not %q", c.AppCheck)
	}
	switch {
	case c.IDSecret != "" && len(c.IDSecret) < ids.MinSecretLen:
		env.bad("ID_SECRET must have at least %d characters", ids.MinSecretLen)
	case c.IDSecret == "" && c.Backend == "firestore" && c.FirestoreEmulator == "":
		env.bad("ID_SECRET is not set: the store is a real Firestore (FIRESTORE_EMULATOR_HOST is unset), where every server must derive the same ids; set the same secret of at least %d characters on each (make deploy keeps it in Secret Manager as chat-id-secret)", ids.MinSecretLen)
	case c.IDSecret == "" && (env.getenv("K_SERVICE") != "" || env.getenv("FUNCTION_TARGET") != ""):
		env.bad("ID_SECRET is not set: on Google Cloud every instance must derive the same ids (make deploy keeps it in Secret Manager)")
	}
	for _, problem := range emulatorRisks(env.getenv, *c) {
		env.bad("%s", problem)
	}
}

// checkChoices checks the settings that name one of a few choices, or a
// file: the context strategy and budget, and the offline stand-in's word
// vectors.
func (c *Config) checkChoices(env *vars) {
	if err := c.DefaultContext().Validate(); err != nil {
		env.bad("CONTEXT_STRATEGY (or its former name, MEMORY_STRATEGY) must be buffer, window, token_buffer or summary_buffer")
	}
	if c.ContextBudget != 0 && c.ContextBudget < sessions.MinBudgetTokens {
		env.bad("CONTEXT_TOKEN_BUDGET must be at least %d (or 0 for 75%% of the model's window)", sessions.MinBudgetTokens)
	}
	if w := c.WordVectors; w != "auto" && w != "off" {
		if _, err := os.Stat(w); err != nil {
			env.bad("WORD_VECTORS must be auto, off or the word vectors' file, not %q (%v)", w, err)
		}
	}
}

// parseModels reads CHAT_MODELS: "name[:window[:input/cached/output]],…";
// a model without a window has the one known for its name, one without
// prices (dollars per million tokens) its list price if known. The
// default model is always offered, first.
func parseModels(v, def string) ([]ChatModel, error) {
	out := []ChatModel{{Name: def, ContextSize: history.ContextSize(def)}}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, window, hasWindow := strings.Cut(item, ":")
		window, prices, hasPrices := strings.Cut(window, ":")
		m := ChatModel{Name: strings.TrimSpace(name), ContextSize: history.ContextSize(name)}
		if p, err := parsePrice(m.Name, prices, hasPrices); err != nil {
			return nil, err
		} else if !p.Zero() {
			m.Price = &p
		}
		if hasWindow && strings.TrimSpace(window) != "" {
			n, err := strconv.Atoi(strings.TrimSpace(window))
			if err != nil || n < 1000 || n > 10_000_000 {
				return nil, fmt.Errorf("CHAT_MODELS: %q: the context window must be a whole number of tokens from 1000 to 10000000", item)
			}
			m.ContextSize = n
		}
		if m.Name == "" || strings.ContainsAny(m.Name, " \t") {
			return nil, fmt.Errorf("CHAT_MODELS: %q is not a model name", item)
		}
		if m.Name == def {
			out[0] = m
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// parsePrice reads a model's prices, "input/cached/output" in dollars per
// million tokens (zero when none are given: its list price applies).
func parsePrice(model, v string, given bool) (chat.Price, error) {
	if !given {
		return chat.Price{}, nil
	}
	parts := strings.Split(v, "/")
	var n [3]float64
	for i := range n {
		var err error
		if len(parts) == 3 {
			n[i], err = strconv.ParseFloat(strings.TrimSpace(parts[i]), 64)
		}
		if len(parts) != 3 || err != nil || n[i] < 0 || n[i] > 10_000 || n[i] != n[i] {
			return chat.Price{}, fmt.Errorf("CHAT_MODELS: %q: prices are input/cached/output in dollars per million tokens, e.g. 0.15/0.075/0.6", model+":"+v)
		}
	}
	return chat.Price{Input: n[0], CachedInput: n[1], Output: n[2]}, nil
}

// emulatorRisks lists what would let anyone be anyone: the Auth emulator
// accepts unsigned tokens, so a server that trusts it must never run on
// Google Cloud (K_SERVICE or FUNCTION_TARGET set), nor for a real project
// (one whose id does not start with "demo-"). An emulated Firestore on
// Google Cloud is refused too: it would keep production data nowhere.
func emulatorRisks(getenv func(string) string, c Config) []string {
	var risks []string
	for _, deployed := range []string{"K_SERVICE", "FUNCTION_TARGET"} {
		if getenv(deployed) == "" {
			continue
		}
		for name, addr := range map[string]string{"FIREBASE_AUTH_EMULATOR_HOST": c.AuthEmulator, "FIRESTORE_EMULATOR_HOST": c.FirestoreEmulator} {
			if addr != "" {
				risks = append(risks, fmt.Sprintf("%s is set while %s says this runs on Google Cloud: unset %s (an emulator there trusts anyone)", name, deployed, name))
			}
		}
		break
	}
	if c.AuthEmulator != "" && c.ProjectID != "" && !strings.HasPrefix(c.ProjectID, "demo-") {
		risks = append(risks, fmt.Sprintf("FIREBASE_AUTH_EMULATOR_HOST is set for GOOGLE_CLOUD_PROJECT=%q: the Auth emulator accepts unsigned tokens, so use it only with a demo- project", c.ProjectID))
	}
	sort.Strings(risks)
	return risks
}

// models are the models sessions may choose: CHAT_MODELS, or the
// default alone.
func (c Config) models() []ChatModel {
	if len(c.ChatModels) > 0 {
		return c.ChatModels
	}
	return []ChatModel{{Name: c.ChatModel, ContextSize: history.ContextSize(c.ChatModel)}}
}

// contextSizeOf is model's context size: as CHAT_MODELS says, else the one
// known for its name.
func (c Config) contextSizeOf(model string) int {
	for _, m := range c.ChatModels {
		if m.Name == model {
			return m.ContextSize
		}
	}
	return history.ContextSize(model)
}

// Policy is the retention policy; a period left at zero keeps its default.
func (c Config) Policy() sessions.Policy {
	p := sessions.DefaultPolicy()
	for i, d := range []*time.Duration{&p.ActiveIdle, &p.Archived, &p.Deleted} {
		if c.RetentionDays[i] > 0 {
			*d = time.Duration(c.RetentionDays[i]) * sessions.Day
		}
	}
	p.Messages = time.Duration(c.MessageDays) * sessions.Day
	return p
}

// MemorySettings are long-term memory's settings: the defaults, with the
// history's share of the block as configured.
func (c Config) MemorySettings() longterm.Settings {
	s := longterm.DefaultSettings()
	s.HistoryShare = float64(c.HistoryShare) / 100
	return s
}

// DefaultContext is the context settings of new sessions that choose none.
func (c Config) DefaultContext() sessions.ContextSettings {
	return sessions.ContextSettings{Strategy: sessions.Strategy(c.ContextStrategy), WindowExchanges: c.WindowExchanges}
}

// OfflineModel reports whether replies come from the offline stand-in.
func (c Config) OfflineModel() bool { return c.OpenAIKey == "" && c.OpenAIBaseURL == "" }
