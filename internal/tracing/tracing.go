package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of Latchkey's spans.
const ScopeName = "github.com/latchkey/latchkey"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// names another.
const DefaultServiceName = "latchkey"

// shutdownTimeout bounds the final flush when the caller's context has no deadline.
const shutdownTimeout = 10 * time.Second

var (
	enabled atomic.Bool
	tracer  trace.Tracer = noop.NewTracerProvider().Tracer(ScopeName)
	// propagator reads incoming traceparent headers.
	propagator propagation.TextMapPropagator = propagation.TraceContext{}
	// off is the non-recording span Start returns while tracing is off.
	off trace.Span = noop.Span{}
)

// Configured reports whether the environment asks for traces: an OTLP endpoint is set, and
// neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none turns them off.
func Configured() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Enabled reports whether spans are being recorded (Setup installed a provider that has not
// been shut down).
func Enabled() bool { return enabled.Load() }

// Setup installs a tracer provider exporting over OTLP/HTTP when Configured, and returns the
// function that flushes and stops it; call that after the server has drained. Unconfigured it
// installs nothing and returns a no-op.
func Setup(ctx context.Context) (shutdown func(context.Context) error, err error) {
	if !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	if enabled.Load() {
		return nil, fmt.Errorf("tracing: already set up")
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later detectors win: the SDK's own attributes, then the default name, then the
	// environment's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)), resource.WithFromEnv())
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER(_ARG); WithBatcher reads OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	tracer = tp.Tracer(ScopeName)
	enabled.Store(true)
	return func(ctx context.Context) error {
		if !enabled.CompareAndSwap(true, false) {
			return nil
		}
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, shutdownTimeout)
			defer cancel()
		}
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flushing spans: %w", err)
		}
		return nil
	}, nil
}

// NoSpan returns a span that records nothing (the one Start returns while tracing is off).
func NoSpan() trace.Span { return off }

// SpanFrom returns the span in ctx, or without looking when tracing is off a span that records
// nothing.
func SpanFrom(ctx context.Context) trace.Span {
	if !enabled.Load() {
		return off
	}
	return trace.SpanFromContext(ctx)
}

// Start opens a span named name as a child of the span in ctx. Off, or when ctx carries no span
// (work no request started: no root spans for it), it returns ctx itself and a non-recording
// span, allocating nothing; callers compute attributes only when span.IsRecording().
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	if !enabled.Load() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, off
	}
	return tracer.Start(ctx, name)
}

// StartServer opens the server span of an incoming request, continuing the trace a W3C
// traceparent header in h names. Off, it returns ctx itself and a non-recording span.
func StartServer(ctx context.Context, h propagation.TextMapCarrier, name string) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, off
	}
	ctx = propagator.Extract(ctx, h)
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}
