// Package postgres is the production store: PostgreSQL through pgx's native API and a
// pgxpool of Options.MaxConns connections (default 32). Any server that speaks PostgreSQL's
// protocol and SQL (CockroachDB, YugabyteDB) is the road past one machine. It owns its schema
// (migrations/, applied at Open in order, one transaction each under an advisory lock so
// processes starting together migrate once, recorded in schema_migrations).
//
// # Durability and isolation
//
// Each Update is one READ COMMITTED transaction with synchronous_commit=on (or shares one with
// other Updates, see Group commit): when Update returns nil the commit is flushed to the
// server's WAL. PostgreSQL group-commits concurrent transactions in one WAL flush, so
// throughput grows with the pool.
//
// Get inside Update is SELECT ... FOR UPDATE: a read-modify-write (Get, change, Put) holds the
// row until commit and concurrent ones queue behind it, so no update is lost. Inserts of the
// same (kind, id) or of the same unique key queue on the index and exactly one wins; the
// others get store.ErrAlreadyExists.
//
// # Round trips
//
// A session (session.go) runs the plain reads that come before anything needs the transaction
// on their own (under READ COMMITTED they see and lock the same either way), sends BEGIN in one
// pipeline with the first statement that needs it (a write, Get's FOR UPDATE, a lock, a
// savepoint), and defers the writes whose only failure is one the caller does not act on (an
// activity's upsert, a Put without unique keys, a notification) to the pipeline of the next
// statement or of the COMMIT. A session takes its connection from the pool at its first
// statement, not before. A signing activity whose records are all in memory is one round trip
// (BEGIN, the activity, COMMIT); an Update that only reads sends neither BEGIN nor COMMIT. When a
// deferred write is refused, the server skips the rest of its pipeline (COMMIT included), and
// Update runs fn again with every write sent on its own, so fn sees the failure where it made
// the write; that re-run is not one of the MaxAttempts.
//
// # Group commit
//
// An Update that owes nothing but BEGIN, deferred writes and COMMIT when fn returns is committed
// together with the other such Updates waiting at that moment: one transaction, one pipeline,
// one WAL flush for all of them (commit.go; at most Options.CommitGroups in flight). They are
// acknowledged together when COMMIT returns. If the server refuses one of their writes, that
// transaction keeps nothing: the refused Update runs fn again as above, and each of the others
// commits its writes in a transaction of its own.
//
// # Retries
//
// A serialization failure (40001) or a deadlock (40P01) anywhere in fn's error chain rolls
// the transaction back and runs fn again, up to Options.MaxAttempts times, after a jittered
// pause of 0.5-1 ms doubling up to 50 ms. fn must therefore have no effect outside its Tx.
//
// # Conflicts without aborting
//
// In PostgreSQL a failed statement aborts the whole transaction, yet ErrAlreadyExists is an
// answer callers act on (the activity engine looks up who holds a fingerprint). So conflicts
// are detected without errors where possible (INSERT ... ON CONFLICT DO NOTHING and counting
// rows: Insert, a new activity), and otherwise (Put with unique keys, updating an activity
// with a fingerprint) the statements run in a savepoint, pipelined with it in one round trip,
// that is rolled back on conflict. The transaction stays usable either way.
//
// View runs plain pooled queries: each read sees what was committed when it started.
// Errors carry the SQLSTATE and the server's message, never the statement's parameters.
package postgres
