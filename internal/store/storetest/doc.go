// Package storetest is the conformance suite for store drivers (after dex's
// storage/conformance): Run takes a function that opens a fresh store and runs, as subtests,
// the behaviour every driver must show. The SQLite driver runs it always; the PostgreSQL
// driver when LATCHKEY_TEST_DATABASE_URL is set. BenchmarkUpdates is the shared write
// benchmark (32 concurrent callers, small durable Updates).
//
// A new driver is done when Run passes, under -race.
package storetest
