// Package servertest is the in-process Latchkey the tests of every domain drive: New opens a
// real server (store, custody, engine, HTTP API behind httptest) on a temporary data
// directory, and its Client stamps activities and queries with an API key as a Turnkey SDK
// does, answering with the decoded Response.
//
// The store is SQLite in the data directory unless LATCHKEY_TEST_DATABASE_URL names a
// PostgreSQL; then each Harness gets a fresh schema there, dropped when the test ends
// (SQLite forces SQLite for tests that read the database files). The harness clock is
// frozen at the start and moves only by Advance, so expiries are tested without sleeping.
//
// The package imports internal/server; tests of a domain under internal/ops use it from
// their external test package (package wallets_test), which keeps the import graph acyclic.
package servertest
