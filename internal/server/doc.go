// Package server assembles one Latchkey: it opens the store (SQLite in the data directory, or
// PostgreSQL), the keyring under the operator's master key and the server identity keys, builds
// the activity engine with every registered operation, and serves the listeners until its
// context ends, draining in-flight requests.
//
// It also holds the operator actions that happen outside the API: creating a top-level
// organization (`latchkey init`, `serve --dev`) and printing the server's public keys.
package server
