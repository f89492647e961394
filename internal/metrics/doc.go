// Package metrics is Latchkey's observability at the process level: Prometheus metrics
// (requests by listener, operation and status with a latency histogram; activities by type and
// outcome; policy decisions; store commits; outbox backlogs and delivery failures; one-time-code
// sends; chain RPC errors; the Go runtime and process), served on a listener of their own
// (--metrics-addr), and the access log: one line per request at info level with the request
// id, operation, organization id, status and duration, never a body or a secret.
//
// A *Metrics may be nil: every method is then a no-op, so packages record unconditionally and
// tests need no registry. Label values are bounded: operations are the swagger's paths or
// "unknown", activity types the wire's, so a client cannot grow the series without limit.
package metrics
