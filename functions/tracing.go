package functions

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

// Traces: every request is a span, a turn a child span of it, and under
// the turn each Firestore call (the Go client makes those spans itself,
// through the global tracer provider) and the model call. Spans carry ids,
// the context strategy and token counts, never content. Where they go is
// TRACE_EXPORTER's choice; log lines carry the trace id where Cloud
// Logging looks for it, so logs and traces link.

// tracerName names this backend's own spans.
const tracerName = "github.com/chatmemory/backend"

// propagator reads trace context from W3C traceparent headers, which
// Cloud Run and Cloud Functions (2nd gen) send.
var propagator = propagation.TraceContext{}

// cloudTraceHeader is Google's older trace header: TRACE_ID/SPAN_ID;o=1.
var cloudTraceHeader = regexp.MustCompile(`^([0-9a-fA-F]{32})/(\d+)(?:;o=(\d))?`)

// traceRequests makes each request a span, continuing the caller's trace
// (traceparent, else X-Cloud-Trace-Context); the router names it by its
// route (see nameSpan).
func (a *App) traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = fromCloudTraceHeader(ctx, r.Header.Get("X-Cloud-Trace-Context"))
		}
		ctx, span := tracer().Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(semconv.HTTPResponseStatusCode(sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

func fromCloudTraceHeader(ctx context.Context, h string) context.Context {
	m := cloudTraceHeader.FindStringSubmatch(h)
	if m == nil {
		return ctx
	}
	tid, err := trace.TraceIDFromHex(m[1])
	span, perr := strconv.ParseUint(m[2], 10, 64)
	if err != nil || perr != nil || span == 0 {
		return ctx
	}
	var sid trace.SpanID
	for i := range 8 {
		sid[7-i] = byte(span >> (8 * i))
	}
	flags := trace.TraceFlags(0)
	if m[3] == "1" {
		flags = trace.FlagsSampled
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}))
}

// tracedTurn runs a chat turn in a span of its own, which its Firestore
// calls and model call are children of; it records ids, the strategy and
// token counts, never what was said.
func (a *App) tracedTurn(ctx context.Context, req chat.TurnRequest) (*chat.TurnResult, error) {
	tctx, span := tracer().Start(ctx, "chat.turn", trace.WithAttributes(
		attribute.Bool("turn.regenerate", req.Regenerate != ""), attribute.Bool("turn.edit", req.Edit != ""),
		attribute.Bool("turn.stream", req.OnDelta != nil)))
	defer span.End()
	if req.SessionID != "" {
		span.SetAttributes(attribute.String("session.id", req.SessionID))
	}
	// Its metrics measure it while it runs (see recordTurn).
	times := &turnTimes{start: time.Now()}
	tctx = context.WithValue(tctx, turnTimesKey{}, times)
	first := func() { times.firstToken.CompareAndSwap(0, time.Now().UnixNano()) }
	if onDelta := req.OnDelta; onDelta != nil {
		req.OnDelta = func(text string) { first(); onDelta(text) }
	}
	// The turn's span ends with its reply; the work that follows the reply
	// runs under the request's span, beside it.
	onReply := req.OnReply
	req.OnReply = func(res *chat.TurnResult) {
		first()
		times.replied = time.Now()
		span.SetAttributes(attribute.String("session.id", res.Session.ID), attribute.Bool("turn.replayed", res.Replayed),
			attribute.Int("message.seq", res.User.Seq), attribute.Int("reply.seq", res.Reply.Seq),
			attribute.Int("reply.tokens", res.Reply.Tokens))
		if c := res.Context; c != nil {
			span.SetAttributes(attribute.String("context.strategy", string(c.Strategy)), attribute.Int("context.tokens", c.Tokens),
				attribute.Int("context.budget", c.Budget), attribute.Int("context.messages", len(c.Messages)),
				attribute.Bool("context.summary", c.Compaction != nil))
		}
		span.End()
		if onReply != nil {
			onReply(res)
		}
	}
	kind := "turn"
	switch {
	case req.Regenerate != "":
		kind = "regenerate"
	case req.Edit != "":
		kind = "edit"
	}
	res, err := a.Chat.Turn(chat.WithAfterTurnContext(tctx, ctx), req)
	if err != nil {
		span.SetStatus(codes.Error, string(errs.CodeOf(err)))
		a.Metrics.turn(ctx, times, kind, req.OnDelta != nil, apiCode(err))
		return nil, err
	}
	a.Metrics.turn(ctx, times, kind, req.OnDelta != nil, "ok")
	return res, nil
}

// tracedModel is a model whose calls are spans: the model, whether it
// streamed, the tokens and the finish reason.
type tracedModel struct {
	chat.Model
	metrics *Metrics
}

func (m tracedModel) Generate(ctx context.Context, req chat.Request, onDelta func(string)) (*chat.Reply, error) {
	ctx, span := tracer().Start(ctx, "llm.generate", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("llm.model", req.Model), attribute.Bool("llm.stream", onDelta != nil),
		attribute.Int("llm.messages", len(req.Messages))))
	defer span.End()
	started := time.Now()
	reply, err := m.Model.Generate(ctx, req, onDelta)
	if t := timesOf(ctx); t != nil && taskOf(req.System) == "reply" {
		t.modelNanos.Add(int64(time.Since(started)))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "the model did not answer")
		return nil, err
	}
	m.metrics.modelTokens(ctx, taskOf(req.System), reply.PromptTokens, reply.CompletionTokens)
	span.SetAttributes(attribute.Int("llm.prompt_tokens", reply.PromptTokens), attribute.Int("llm.completion_tokens", reply.CompletionTokens),
		attribute.String("llm.finish_reason", reply.FinishReason))
	return reply, nil
}

func tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(tracerName) }

func (h traceLogs) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("logging.googleapis.com/trace", "projects/"+h.project+"/traces/"+sc.TraceID().String()),
			slog.String("logging.googleapis.com/spanId", sc.SpanID().String()),
			slog.Bool("logging.googleapis.com/trace_sampled", sc.IsSampled()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceLogs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceLogs{Handler: h.Handler.WithAttrs(attrs), project: h.project}
}

func (h traceLogs) WithGroup(name string) slog.Handler {
	return traceLogs{Handler: h.Handler.WithGroup(name), project: h.project}
}

// nameSpan names the request's span by the route it matched.
func nameSpan(ctx context.Context, pattern string) {
	span := trace.SpanFromContext(ctx)
	span.SetName(pattern)
	span.SetAttributes(semconv.HTTPRoute(pattern))
}

// TracedModel is m with its calls traced and their tokens counted in x.
func TracedModel(m chat.Model, x *Metrics) chat.Model { return tracedModel{Model: m, metrics: x} }

// WithTraceIDs is h writing each record's trace and span ids where Cloud
// Logging looks for them, for project.
func WithTraceIDs(h slog.Handler, project string) slog.Handler { return withTraceIDs(h, project) }

// traceLogs adds to each log record written within a span the fields by
// which Cloud Logging links it to its trace.
type traceLogs struct {
	slog.Handler
	project string
}

func withTraceIDs(h slog.Handler, project string) slog.Handler {
	if _, ok := h.(traceLogs); ok {
		return h
	}
	return traceLogs{Handler: h, project: project}
}
