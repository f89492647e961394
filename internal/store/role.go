package store

import (
	"context"
	"errors"
)

// Role is what a store says of the database it reaches: /readyz, the health pages and the
// metrics show it.
type Role struct {
	// Role is "primary" (accepts writes), "standby" (PostgreSQL in recovery), "read-only" (a
	// primary whose transactions are read-only, such as one being demoted) or "embedded"
	// (SQLite: the process's own file).
	Role string
	// Writable: the store accepts writes now.
	Writable bool
	// Standbys and SyncStandbys count the standbys streaming from a PostgreSQL primary, and
	// those of them that are synchronous (pg_stat_replication's sync_state "sync" or
	// "quorum"). -1: not known (a standby, SQLite, or a role not allowed to see them).
	Standbys, SyncStandbys int
	// Refused, when not empty, says why the store refuses writes although the database
	// accepts them (PostgreSQL with RequireSyncStandby and no synchronous standby).
	Refused string
}

// Ready reports whether the store takes writes: writable and refusing none.
func (r Role) Ready() bool { return r.Writable && r.Refused == "" }

// RoleReader is implemented by both drivers: Role asks the database what it is now. It is
// cheap (one round trip on a connection of its own kind) and never waits behind the store's
// other work for long.
type RoleReader interface {
	Role(ctx context.Context) (Role, error)
}

// ErrNoSyncStandby: the store was told to refuse writes while its primary has no synchronous
// standby, and it has none. It is a kind of ErrUnavailable.
var ErrNoSyncStandby = errors.New("store: the primary has no synchronous standby")

// ReadRole is st's Role when it has one (RoleReader); otherwise a Ping, and a store that
// answers is taken as writable, of an unknown role.
func ReadRole(ctx context.Context, st Store) (Role, error) {
	if rr, ok := st.(RoleReader); ok {
		return rr.Role(ctx)
	}
	if err := st.Ping(ctx); err != nil {
		return Role{}, err
	}
	return Role{Role: "unknown", Writable: true, Standbys: -1, SyncStandbys: -1}, nil
}
