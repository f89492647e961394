// Package failover holds no code, only a test that kills machines: a PostgreSQL primary with a
// synchronous standby (started from the installed PostgreSQL binaries, data directories on
// 127.0.0.1), two real `latchkey serve` processes on one multi-host database URL, and a signing,
// wallet-creating and tag-creating load through both, keeping a ledger of every answer.
//
// Each scenario takes the primary away (kill -9 of its every process, promoted at once or after
// a delay; or every process stopped with SIGSTOP, so no connection is reset) or kills one
// Latchkey process, then checks the ledger against the new primary: every acknowledged activity
// is there with the result the client was given, no request body made two activities, no
// request got an error, both servers serve on without a restart, and an API key deleted after the
// failover is refused at once by both. A negative control runs the same checker after failing
// over to an asynchronous standby held behind: it must find acknowledged activities lost.
//
// The test runs only when LATCHKEY_FAILOVER=1 (CI sets it; .ci/run) and the PostgreSQL 15
// binaries are installed (LATCHKEY_PG_BIN names another directory). It reports the latency the
// switch added to the requests caught in it (go test -v). docs/operations.md, "High
// availability", describes the deployment it models and quotes its figures.
package failover
