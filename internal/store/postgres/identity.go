package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The pool and the listening connection must reach the same server. During a failover, or
// behind a multi-host URL, they may not: the pool's connections still on the old primary while
// the listener reconnected to the new one, or the other way round. Notifications heard from
// one server say nothing of commits on the other, so the cache would trust values another
// process already changed. Each connection learns which server it reached when it connects
// (its address and port as the server sees them, and when that server started); the listener
// compares its own with the pool's newest at every round trip and, when they differ, drops its
// connection (the cache goes down) and connects again until they agree.

// qServer names the server a connection reached: a restarted or promoted server, or another
// host, answers differently.
const qServer = `SELECT coalesce(host(inet_server_addr()), '') || ':' || coalesce(inet_server_port(), 0)::text ||
	'@' || pg_postmaster_start_time()::text`

// errOtherServer is what the listener returns when it reached another server than the pool.
var errOtherServer = errors.New("postgres: the listening connection and the pool reach different servers")

func serverOf(ctx context.Context, conn *pgx.Conn) (string, error) {
	var id string
	if err := conn.QueryRow(ctx, qServer).Scan(&id); err != nil {
		return "", fmt.Errorf("postgres: which server: %w", err)
	}
	return id, nil
}

// afterConnect is the pool's AfterConnect: it records the server the new connection reached.
func (s *Store) afterConnect(ctx context.Context, conn *pgx.Conn) error {
	id, err := serverOf(ctx, conn)
	if err != nil {
		return err
	}
	s.server.Store(&id)
	return nil
}

// sameServer tells whether the listener's server is the one the pool's newest connection
// reached (true when the pool has none yet).
func (s *Store) sameServer(listener string) bool {
	p := s.server.Load()
	return p == nil || *p == listener
}
