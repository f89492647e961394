// Package tracing owns Latchkey's OpenTelemetry traces: whether they are on, the tracer
// provider and its OTLP/HTTP exporter, the W3C trace-context propagator, and the helpers the
// request path calls: StartServer (the API request's span, continuing a client's traceparent),
// Start (a child span; none without a parent, so there are no stray root traces) and SpanFrom.
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set (and OTEL_SDK_DISABLED is not "true", OTEL_TRACES_EXPORTER not "none"). Off, Setup
// installs nothing: the global tracer provider stays OpenTelemetry's no-op one, no exporter
// goroutine runs, and the helpers return their context unchanged with a non-recording span
// after one atomic load, without allocating. On, every other standard variable is read by the
// SDK itself, not here: the exporter's (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE…), the sampler's (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), the batch
// processor's (OTEL_BSP_*) and the resource's (OTEL_SERVICE_NAME, default "latchkey";
// OTEL_RESOURCE_ATTRIBUTES).
//
// The span tree of an API request, and the attributes spans may carry, are documented in
// docs/operations.md ("Tracing"). Spans never carry request bodies, stamps, keys, signatures
// or error messages (which can echo the body): identifiers, types, counts and codes only.
package tracing
