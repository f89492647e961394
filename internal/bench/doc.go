// Package bench is Latchkey's load tool (`latchkey bench`): N workers send freshly stamped
// requests of one operation to a running server for a duration, and it reports requests/s and
// latency percentiles. Each submit body carries a fresh timestampMs and a unique name, so every
// request is a new durable activity (no idempotent replay). In the measured window each worker
// sends its requests over one keep-alive HTTP/1.1 connection of its own, each written in one
// piece and its response read in full.
package bench
