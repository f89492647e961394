package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// qRole asks the server what it is: in recovery (a standby), whether a new transaction would
// be read-only, and the standbys streaming from it. pg_stat_replication shows sync_state only
// to roles with pg_read_all_stats (pg_monitor): a role without it counts no synchronous ones.
const qRole = `SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on',
	(SELECT count(*) FROM pg_stat_replication),
	(SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))`

// roleTTL is how long a role read for RequireSyncStandby is trusted.
const roleTTL = time.Second

// Role reads the server's role (store.RoleReader), bounded by StallTimeout.
func (s *Store) Role(ctx context.Context) (store.Role, error) {
	if s.closed.Load() {
		return store.Role{}, store.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.StallTimeout)
	defer cancel()
	var recovery, readOnly bool
	var standbys, sync int
	if err := s.pool.QueryRow(ctx, qRole).Scan(&recovery, &readOnly, &standbys, &sync); err != nil {
		return store.Role{}, mark(fmt.Errorf("postgres: role: %w", err))
	}
	r := store.Role{Role: "primary", Writable: true, Standbys: standbys, SyncStandbys: sync}
	switch {
	case recovery:
		r = store.Role{Role: "standby", Standbys: -1, SyncStandbys: -1}
	case readOnly:
		r.Role, r.Writable = "read-only", false
	}
	if s.opts.RequireSyncStandby && r.Writable && r.SyncStandbys <= 0 {
		r.Refused = "no synchronous standby (RequireSyncStandby)"
	}
	s.role.Store(&timedRole{role: r, at: time.Now()})
	return r, nil
}

type timedRole struct {
	role store.Role
	at   time.Time
}

// refuseWrites returns store.ErrNoSyncStandby (unavailable) when RequireSyncStandby is set and
// the primary has no synchronous standby, reading the role again at most once per roleTTL.
func (s *Store) refuseWrites(ctx context.Context) error {
	if !s.opts.RequireSyncStandby {
		return nil
	}
	r := s.role.Load()
	if r == nil || time.Since(r.at) > roleTTL {
		role, err := s.Role(ctx)
		if err != nil {
			return err
		}
		r = &timedRole{role: role}
	}
	if r.role.Writable && r.role.Refused != "" {
		return store.Unavailable(store.ErrNoSyncStandby)
	}
	return nil
}
