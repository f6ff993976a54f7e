// Package functions is the HTTP edge of the backend: the endpoints web apps
// call (chat, sessions, messages, long-term memory, account, the AI SDK's
// chat protocol), also as callable functions; authentication with Firebase
// ID tokens and App Check; CORS, size caps, JSON errors, request logs,
// traces and metrics. Package app builds it over the services; the same
// handler serves deployed (registered by the root package) and locally
// (cmd/server).
package functions

import (
	"context"
	"log/slog"
	"time"
)

// Pinger answers whether it is reachable (the health check's question).
type Pinger interface {
	Ping(ctx context.Context) error
}

// App is the HTTP edge over the services behind the endpoints.
type App struct {
	Sessions       Sessions
	History        History
	Chat           Chat
	Memory         Memory
	Search         Search // nil: no embeddings, no search
	Privacy        Privacy
	Attachments    Attachments // nil: no file storage, the attachment routes answer 404
	Auth           Verifier
	AppCheck       *AppCheck // nil: App Check is off
	Health         Pinger    // what /healthz asks: the storage
	Log            *slog.Logger
	AllowedOrigins []string
	// Models are what sessions may choose, the default first.
	Models       []ChatModel
	MaxBodyBytes int64
	ReadTimeout  time.Duration // for a request's body; 0: none

	// Metrics records the turns, errors and ratings the edge serves (and,
	// through the model package app wraps with it, the model's tokens).
	Metrics *Metrics

	prefixes []string // the top-level paths of the routes (see APIPrefixes)
}
