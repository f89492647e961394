package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Change notifications: a transaction tells every process sharing the database what it changed
// (Notify, sent by PostgreSQL at commit and only if the transaction commits), and each process
// hears it on a connection of its own (Listen). The channel is per schema, so stores in
// different schemas of one database do not hear each other.

// channelSQL is the notification channel of the connection's schema (the first of its
// search_path), computed the same way by the sender and the listener.
const channelSQL = "'latchkey_changes_' || left(md5(current_schema()), 16)"

// Notify sends payload on the store's channel when the transaction commits (nothing if it
// rolls back). PostgreSQL limits a payload to 8,000 bytes.
func (t *tx) Notify(ctx context.Context, payload string) (err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue("SELECT pg_notify("+channelSQL+", $1)", payload)
	if err := t.s.write(ctx, b); err != nil {
		return fmt.Errorf("postgres: notify: %w", err)
	}
	return nil
}

// Listener is told what Listen hears.
type Listener struct {
	// Notify is a payload another transaction sent (this process's own included).
	Notify func(payload string)
	// Up: the connection is listening again; notifications sent before it are lost.
	Up func()
	// Live: every notification committed before at has been delivered (a round trip on the
	// listening connection that started at at has completed).
	Live func(at time.Time)
	// Down: the connection is lost; notifications may be missed until Up.
	Down func()
	// Barrier, when set, is served by Listen (see Barrier).
	Barrier *Barrier
}

// ListenInterval is how long Listen waits for a notification before it proves the
// connection alive with a round trip.
const ListenInterval = 200 * time.Millisecond

// Barrier lets a reader wait until every notification committed before it asked has been
// delivered to Notify. PostgreSQL signals a listening backend before the notifying commit
// returns to its client, and the backend sends pending notifications when it next reads from
// its client; so once a round trip on the listening connection that began after the reader
// asked has completed, and the notifications that arrived with it are handled, every
// notification committed before the reader asked has been handled. Concurrent readers share
// one round trip.
type Barrier struct {
	mu      sync.Mutex
	waiters chan struct{}      // closed when a round trip begun after they asked completes
	cancel  context.CancelFunc // Listen's current wait for a notification, if any
}

// Wait returns once a round trip begun after the call has completed on the listening
// connection, or with ctx's error.
func (b *Barrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	if b.waiters == nil {
		b.waiters = make(chan struct{})
	}
	ch := b.waiters
	if b.cancel != nil {
		b.cancel()
		b.cancel = nil
	}
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startWait returns the context of Listen's next wait, or ok false when readers wait for a
// round trip.
func (b *Barrier) startWait(parent context.Context) (context.Context, context.CancelFunc, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiters != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(parent, ListenInterval)
	b.cancel = cancel
	return ctx, cancel, true
}

func (b *Barrier) endWait() {
	b.mu.Lock()
	b.cancel = nil
	b.mu.Unlock()
}

// take returns the readers a round trip starting now will release (nil: none).
func (b *Barrier) take() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := b.waiters
	b.waiters = nil
	return ch
}

// Listen listens on the store's channel on a connection of its own until ctx ends, and
// reconnects when the connection is lost (the pool's settings, a pause of up to a second
// between attempts).
func (s *Store) Listen(ctx context.Context, l Listener) {
	if l.Barrier == nil {
		l.Barrier = new(Barrier)
	}
	cfg := s.pool.Config().ConnConfig
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		if err := s.listenOnce(ctx, cfg, l); err != nil && ctx.Err() == nil {
			l.Down()
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 50 * time.Millisecond
	}
}

func (s *Store) listenOnce(ctx context.Context, cfg *pgx.ConnConfig, l Listener) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	server, err := serverOf(ctx, conn)
	if err != nil {
		return err
	}
	if !s.sameServer(server) {
		return errOtherServer
	}
	var channel string
	if err := conn.QueryRow(ctx, "SELECT "+channelSQL).Scan(&channel); err != nil {
		return err
	}
	at := time.Now()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	l.Up()
	l.Live(at)
	b := l.Barrier
	for {
		wctx, cancel, ok := b.startWait(ctx)
		if ok {
			n, err := conn.WaitForNotification(wctx)
			b.endWait()
			cancel()
			if n != nil {
				l.Notify(n.Payload)
			}
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
				return err
			case time.Since(at) < ListenInterval && err == nil:
				continue
			}
		}
		// A round trip: readers waiting at a Barrier, the interval passed, or notifications
		// arriving back to back (Live must keep moving).
		released := b.take()
		at = time.Now()
		pctx, cancel := context.WithTimeout(ctx, 2*ListenInterval)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return err
		}
		if !s.sameServer(server) {
			return errOtherServer // notifications from here say nothing of the pool's commits
		}
		// Notifications that arrived with the round trip are buffered by pgx.
		done, cancel := context.WithCancel(ctx)
		cancel()
		for {
			n, _ := conn.WaitForNotification(done)
			if n == nil {
				break
			}
			l.Notify(n.Payload)
		}
		l.Live(at)
		if released != nil {
			close(released)
		}
	}
}
