package app

import (
	"context"
	"fmt"
	"os"
	"time"

	mexporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/metric"
	texporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/trace"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chatmemory/backend/functions"
)

// Traces and metrics are exported where TRACE_EXPORTER and
// METRICS_EXPORTER say: set up here, once, with the clients; what they
// record is the HTTP edge's (package functions).

// Trace exporters (TRACE_EXPORTER).
const (
	TracesOff        = "off"
	TracesStdout     = "stdout"
	TracesCloudTrace = "cloudtrace"
)

// Metric exporters (METRICS_EXPORTER).
const (
	MetricsOff             = "off"
	MetricsStdout          = "stdout"
	MetricsCloudMonitoring = "cloudmonitoring"
)

// MetricsInterval is how often metrics are exported.
const MetricsInterval = 60 * time.Second

// setupMetrics installs the global meter provider cfg asks for and returns
// how to flush and stop it.
func setupMetrics(ctx context.Context, cfg Config) (func(context.Context) error, error) {
	var exp sdkmetric.Exporter
	var err error
	switch cfg.MetricsExporter {
	case MetricsOff, "":
		return func(context.Context) error { return nil }, nil
	case MetricsStdout:
		exp, err = stdoutmetric.New(stdoutmetric.WithWriter(os.Stderr))
	case MetricsCloudMonitoring:
		exp, err = mexporter.New(mexporter.WithProjectID(cfg.ProjectID))
	default:
		err = fmt.Errorf("unknown metrics exporter %q", cfg.MetricsExporter)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics (METRICS_EXPORTER=%s): %w", cfg.MetricsExporter, err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(MetricsInterval))),
		sdkmetric.WithResource(resource.NewSchemaless(semconv.ServiceName("chat-memory"))),
	)
	otel.SetMeterProvider(mp)
	return mp.Shutdown, nil
}

// setupTracing installs the global tracer provider cfg asks for and
// returns how to flush and stop it; with traces off it installs nothing.
func setupTracing(ctx context.Context, cfg Config) (func(context.Context) error, error) {
	var exp sdktrace.SpanExporter
	var err error
	switch cfg.TraceExporter {
	case TracesOff, "":
		return func(context.Context) error { return nil }, nil
	case TracesStdout:
		exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	case TracesCloudTrace:
		exp, err = texporter.New(texporter.WithProjectID(cfg.ProjectID))
	default:
		err = fmt.Errorf("unknown trace exporter %q", cfg.TraceExporter)
	}
	if err != nil {
		return nil, fmt.Errorf("traces (TRACE_EXPORTER=%s): %w", cfg.TraceExporter, err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.TraceSampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("chat-memory"))),
	)
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// flushMetrics exports what is recorded now (a CloudEvent function may be
// frozen before the next export).
func flushMetrics(ctx context.Context) {
	if mp, ok := otel.GetMeterProvider().(*sdkmetric.MeterProvider); ok {
		mp.ForceFlush(ctx)
	}
}

// firestoreOptions are the client options Open dials Firestore with: its
// RPCs counted (see functions.FirestoreRPCCounting), and what closes
// what they opened. The client library dials the emulator itself,
// ignoring dial options, so with FIRESTORE_EMULATOR_HOST set the
// connection is dialled here as the library would (plaintext, as the
// owner), with them: a sweep's report counts its round trips on the
// emulator too.
func firestoreOptions() ([]option.ClientOption, func() error, error) {
	counting := functions.FirestoreRPCCounting()
	if addr := os.Getenv("FIRESTORE_EMULATOR_HOST"); addr != "" {
		conn, err := grpc.NewClient(addr, append(counting,
			grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(emulatorOwner{}))...)
		if err != nil {
			return nil, nil, fmt.Errorf("dialling the Firestore emulator at %s: %w", addr, err)
		}
		return []option.ClientOption{option.WithGRPCConn(conn)}, conn.Close, nil
	}
	var out []option.ClientOption
	for _, o := range counting {
		out = append(out, option.WithGRPCDialOption(o))
	}
	return out, func() error { return nil }, nil
}

// emulatorOwner is what the emulator expects of a server's client:
// requests as "owner" pass the security rules, as the library's do.
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (emulatorOwner) RequireTransportSecurity() bool { return false }
