package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

func unsetOTelEnv(t testing.TB) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
		t.Setenv(k, "")
	}
}

// TestOffWhenUnconfigured: with no OTLP endpoint, Setup installs nothing (the global provider
// stays OpenTelemetry's default no-op one), starts no goroutine, and Start hands back the
// caller's context without allocating. It runs first in this package, before any test that
// installs a provider.
func TestOffWhenUnconfigured(t *testing.T) {
	unsetOTelEnv(t)
	before := otel.GetTracerProvider()
	goroutines := runtime.NumGoroutine()
	shutdown, err := Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if Enabled() || Configured() {
		t.Fatal("tracing is on without an endpoint")
	}
	if after := otel.GetTracerProvider(); after != before {
		t.Fatalf("Setup installed a tracer provider (%T) without an endpoint", after)
	}
	if _, ok := otel.GetTextMapPropagator().(propagation.TraceContext); ok {
		t.Fatal("Setup installed a propagator without an endpoint")
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Fatalf("%d goroutines after Setup, %d before", n, goroutines)
	}
	type testKey struct{}
	ctx := context.WithValue(context.Background(), testKey{}, 1)
	got, span := Start(ctx, "x")
	if got != ctx || span.IsRecording() || span.SpanContext().IsValid() {
		t.Fatal("Start while off made a span or a new context")
	}
	got, span = StartServer(
		ctx,
		propagation.HeaderCarrier(
			http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		),
		"x",
	)
	if got != ctx || span.IsRecording() {
		t.Fatal("StartServer while off made a span or a new context")
	}
	if n := testing.AllocsPerRun(100, func() {
		_, s := Start(ctx, "x")
		if s.IsRecording() {
			t.Fatal("recording")
		}
		s.End()
	}); n != 0 {
		t.Fatalf("Start while off allocates %v times", n)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDisabledBySDKVariables: OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none win over an
// endpoint.
func TestDisabledBySDKVariables(t *testing.T) {
	for _, kv := range [][2]string{{"OTEL_SDK_DISABLED", "true"}, {"OTEL_TRACES_EXPORTER", "none"}} {
		unsetOTelEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv(kv[0], kv[1])
		if Configured() {
			t.Fatalf("%s=%s: tracing configured", kv[0], kv[1])
		}
	}
}

// TestSDKReadsItsVariables: the exporter takes its headers and the resource its service name
// from the standard variables, which this package does not read itself.
func TestSDKReadsItsVariables(t *testing.T) {
	var auth atomic.Value
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		auth.Store(r.Header.Get("Authorization"))
		got.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	unsetOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20t0ken")
	t.Setenv("OTEL_SERVICE_NAME", "")
	shutdown, err := Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background()); err == nil {
		t.Fatal("a second Setup succeeded")
	}
	if _, span := Start(context.Background(), "orphan"); span.IsRecording() {
		t.Fatal("Start without a parent made a root span")
	}
	ctx, span := StartServer(context.Background(), propagation.HeaderCarrier{}, "probe")
	if !span.IsRecording() {
		t.Fatal("span not recording with the default sampler")
	}
	if _, child := Start(ctx, "child"); !child.IsRecording() {
		t.Fatal("child span not recording")
	} else {
		child.End()
	}
	span.End()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if got.Load() == 0 {
		t.Fatal("nothing exported on shutdown")
	}
	if a, _ := auth.Load().(string); a != "Bearer t0ken" {
		t.Fatalf("Authorization %q: OTEL_EXPORTER_OTLP_HEADERS not honoured", a)
	}
	if _, span := Start(context.Background(), "after"); span.IsRecording() {
		t.Fatal("recording after shutdown")
	}
}

// BenchmarkStartOff is what each instrumented site costs while tracing is off.
func BenchmarkStartOff(b *testing.B) {
	unsetOTelEnv(b)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, span := Start(ctx, "x")
		if span.IsRecording() {
			b.Fatal("recording")
		}
		span.End()
	}
}
