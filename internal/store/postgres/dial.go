package postgres

import (
	"context"
	"net"
	"syscall"
	"time"
)

// Every connection to the database is a TCP connection whose loss is noticed within seconds:
// keepalive probes on an idle connection, and TCP_USER_TIMEOUT (Linux) on one with data unsent
// or unacknowledged, so that a primary that vanished without resetting its connections (a
// machine powered off, a network partition) fails the statements waiting on it instead of
// holding them for the kernel's default of about fifteen minutes. A server whose processes are
// stopped but whose kernel still acknowledges is caught by Options.StallTimeout instead.

// deadPeer is how long a connection may go without a sign of life from its peer.
const deadPeer = 10 * time.Second

// connectTimeout bounds a connection's establishment when the URL sets no connect_timeout.
const connectTimeout = 5 * time.Second

// dialer returns pgx's DialFunc: keepalive after deadPeer/2 idle, probes every deadPeer/5, three
// unanswered probes drop the connection, and TCP_USER_TIMEOUT of deadPeer.
func dialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout: timeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable:   true,
			Idle:     deadPeer / 2,
			Interval: deadPeer / 5,
			Count:    3,
		},
		Control: func(network, _ string, c syscall.RawConn) error {
			if network != "tcp" && network != "tcp4" && network != "tcp6" {
				return nil
			}
			var serr error
			if err := c.Control(func(fd uintptr) { serr = setUserTimeout(fd, deadPeer) }); err != nil {
				return err
			}
			return serr
		},
	}
	return d.DialContext
}

// alive tells whether a pooled connection can still be used, without a round trip: a peek at
// its socket that does not wait. A connection whose server closed it (a primary killed or shut
// down) has its end of stream, or its last words, waiting there; sending it a COMMIT would
// leave the outcome unknown for nothing. It peeks under Control, not Read: pgx may have a
// reader of its own parked on the socket, whose lock a Read would wait for. What such a reader
// takes first is not seen here; the outcome of a COMMIT then sent is resolved (failover.go).
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = true
	if err := raw.Control(func(fd uintptr) { ok = peekIdle(fd) }); err != nil {
		return false
	}
	return ok
}
