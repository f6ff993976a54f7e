package functions

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	"github.com/chatmemory/backend/kernel/rpcs"
	"github.com/chatmemory/backend/prompts"
	"github.com/chatmemory/backend/retention"
)

// Metrics, beside the traces: what a team alerts on. Instruments come from
// the global meter provider (as the tracer does from the tracer provider),
// which METRICS_EXPORTER sets up; with metrics off they record nothing.

// Latency buckets, in milliseconds.
var msBuckets = metric.WithExplicitBucketBoundaries(5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)

// Metrics are the instruments the backend records with.
type Metrics struct {
	turns, tokens, errors, feedback, swept, sweptDocs metric.Int64Counter
	ttft, backendPath                                 metric.Float64Histogram
	roundTrips                                        metric.Int64Histogram
	backlog                                           metric.Int64Gauge
}

// newMetrics makes the instruments from mp (nil: the global provider,
// which METRICS_EXPORTER set up).
func NewMetrics(mp metric.MeterProvider) *Metrics {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(tracerName)
	// Instrument constructors fail only on invalid names; these are fixed.
	var x Metrics
	x.turns, _ = m.Int64Counter("chat.turns", metric.WithDescription("chat turns, by kind and outcome (ok or an error code)"))
	x.tokens, _ = m.Int64Counter("chat.tokens", metric.WithDescription("model tokens, by kind (prompt, completion) and task"))
	x.errors, _ = m.Int64Counter("api.errors", metric.WithDescription("error answers, by code and route"))
	x.feedback, _ = m.Int64Counter("chat.feedback", metric.WithDescription("ratings of replies (up, down, withdrawn)"))
	x.ttft, _ = m.Float64Histogram("chat.turn.time_to_first_token", metric.WithUnit("ms"), msBuckets,
		metric.WithDescription("from the turn's start to the first piece of the reply (or the reply)"))
	x.backendPath, _ = m.Float64Histogram("chat.turn.backend_path", metric.WithUnit("ms"), msBuckets,
		metric.WithDescription("a turn's time up to its stored reply, without the model's"))
	x.roundTrips, _ = m.Int64Histogram("chat.turn.firestore_round_trips", metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 6, 8, 10, 15, 20),
		metric.WithDescription("Firestore RPCs a turn made up to its stored reply"))
	x.swept, _ = m.Int64Counter("retention.sweep.sessions", metric.WithDescription("sessions the sweep soft-deleted, purged or trimmed"))
	x.sweptDocs, _ = m.Int64Counter("retention.sweep.documents_deleted", metric.WithDescription("documents the sweep deleted"))
	x.backlog, _ = m.Int64Gauge("retention.sweep.backlog", metric.WithDescription("sessions due and not done after a run"))
	return &x
}

// turn records a finished turn: that it ran (and how it ended) and, when
// it answered, its time to first token, its backend path (its time
// without the model's) and its Firestore round trips.
func (x *Metrics) turn(ctx context.Context, t *turnTimes, kind string, stream bool, outcome string) {
	if x == nil { // an App built without NewApp records nothing
		return
	}
	attrs := metric.WithAttributes(attribute.String("turn.kind", kind), attribute.Bool("turn.stream", stream))
	x.turns.Add(ctx, 1, metric.WithAttributes(attribute.String("turn.kind", kind), attribute.Bool("turn.stream", stream),
		attribute.String("outcome", outcome)))
	if outcome != "ok" || t.replied.IsZero() {
		return
	}
	if first := t.firstToken.Load(); first > 0 {
		x.ttft.Record(ctx, float64(first-t.start.UnixNano())/1e6, attrs)
	}
	x.backendPath.Record(ctx, float64(t.replied.Sub(t.start)-time.Duration(t.modelNanos.Load()))/1e6, attrs)
	x.roundTrips.Record(ctx, t.rpcs.Load(), attrs)
}

// taskOf names what a model call was for, by its instruction.
func taskOf(system string) string {
	switch system {
	case prompts.Title:
		return "title"
	case prompts.Summary:
		return "summary"
	case prompts.Extract:
		return "extraction"
	case prompts.Resolve:
		return "resolution"
	}
	return "reply"
}

// modelTokens counts a model call's tokens by kind (prompt, completion)
// and task.
func (x *Metrics) modelTokens(ctx context.Context, task string, prompt, completion int) {
	if x == nil { // an App built without NewApp records nothing
		return
	}
	x.tokens.Add(ctx, int64(prompt), metric.WithAttributes(attribute.String("kind", "prompt"), attribute.String("task", task)))
	x.tokens.Add(ctx, int64(completion), metric.WithAttributes(attribute.String("kind", "completion"), attribute.String("task", task)))
}

// error counts an error answer by its code and route.
func (x *Metrics) error(ctx context.Context, code, route string) {
	if x == nil { // an App built without NewApp records nothing
		return
	}
	x.errors.Add(ctx, 1, metric.WithAttributes(attribute.String("code", code), attribute.String("route", route)))
}

// rating counts a rating.
func (x *Metrics) rating(ctx context.Context, rating string) {
	if x == nil { // an App built without NewApp records nothing
		return
	}
	x.feedback.Add(ctx, 1, metric.WithAttributes(attribute.String("rating", rating)))
}

// sweep records a sweep's progress and the backlog it left.
func (x *Metrics) Sweep(ctx context.Context, r *retention.Report) {
	if x == nil { // an App built without NewApp records nothing
		return
	}
	x.swept.Add(ctx, int64(r.SoftDeleted), metric.WithAttributes(attribute.String("action", "soft_delete")))
	x.swept.Add(ctx, int64(r.Purged+r.ResumedPurges), metric.WithAttributes(attribute.String("action", "purge")))
	x.swept.Add(ctx, int64(r.SessionsTrimmed), metric.WithAttributes(attribute.String("action", "trim")))
	x.sweptDocs.Add(ctx, int64(r.DocumentsDeleted+r.MessagesDeleted))
	if r.Backlog != nil {
		x.backlog.Record(ctx, int64(r.Backlog.ToSoftDelete), metric.WithAttributes(attribute.String("due", "soft_delete")))
		x.backlog.Record(ctx, int64(r.Backlog.ToPurge), metric.WithAttributes(attribute.String("due", "purge")))
		x.backlog.Record(ctx, int64(r.Backlog.PurgesPending), metric.WithAttributes(attribute.String("due", "purge_resume")))
		x.backlog.Record(ctx, int64(r.Backlog.ToTrim), metric.WithAttributes(attribute.String("due", "trim")))
	}
}

// FirestoreRPCCounting are gRPC dial options that count, for each turn,
// the Firestore RPCs made in its context (see recordTurn), and for a run
// that counts its own (rpcs.With), those made under it.
func FirestoreRPCCounting() []grpc.DialOption {
	count := func(ctx context.Context) {
		if t := timesOf(ctx); t != nil {
			t.rpcs.Add(1)
		}
		rpcs.Add(ctx) // a sweep's phases (retention.Report)
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			count(ctx)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			count(ctx)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// turnTimes is what a turn's metrics measure while it runs.
type turnTimes struct {
	start      time.Time
	replied    time.Time    // when the reply was stored (set before turn reads it)
	firstToken atomic.Int64 // unix nanos of the first delta or the reply
	modelNanos atomic.Int64 // spent waiting for the model
	rpcs       atomic.Int64 // Firestore RPCs made for the turn
}

type turnTimesKey struct{}

func timesOf(ctx context.Context) *turnTimes {
	t, _ := ctx.Value(turnTimesKey{}).(*turnTimes)
	return t
}

// apiCode is the code an error answers with.
func apiCode(err error) string { return string(bodyOf(err).Error.Code) }
