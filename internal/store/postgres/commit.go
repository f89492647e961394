package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit across Updates. An Update whose reads were all served without the transaction
// and whose writes were all deferred (a signing activity: its records come from memory, its one
// write is the activity row) owes the database nothing but BEGIN, its writes and COMMIT. Sent on
// its own, that is a transaction, a round trip, a wake-up of a backend and a WAL flush per
// Update. The committer instead sends the writes of every such Update waiting at the moment in
// one transaction:
//
//	BEGIN; writes of Update 1; writes of Update 2; ...; COMMIT   (one pipeline, one Sync)
//
// and acknowledges them all when COMMIT returns. At most Options.CommitGroups groups are in
// flight; Updates that arrive meanwhile form the next group, so under load a group holds what
// arrived during one commit, and a lone Update is sent at once.
//
// The Updates of a group share their outcome only when it is a success. If the server refuses a
// write, it skips the rest of the pipeline (COMMIT included) and nothing of the group is kept:
// the Update whose write was refused runs fn again with its writes sent on their own, as when a
// deferred write fails in its own transaction (session.go), and every other Update commits its
// own writes alone. Only when the connection fails with COMMIT sent, so that the outcome is
// unknown, do all of them return the error, as a lone Update would.

// errAlone tells an Update its writes were not committed with others' and must be committed
// in a transaction of its own.
var errAlone = errors.New("postgres: commit alone")

// member is one Update waiting in the committer.
type member struct {
	writes []*pgx.QueuedQuery
	done   chan struct{}
	err    error // set before done is closed: nil (committed), errAlone, errRerun or the failure
}

type committer struct {
	pool      *pgxpool.Pool
	onCommit  func(n int, d time.Duration)
	maxGroups int // groups in flight at once
	maxSize   int // Updates per group
	stall     time.Duration

	mu      sync.Mutex
	queue   []*member
	running int
}

// commit commits writes with those of the other Updates waiting, or returns errAlone or
// errRerun (see above).
func (c *committer) commit(writes []*pgx.QueuedQuery) error {
	m := &member{writes: writes, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, m)
	lead := c.running < c.maxGroups
	if lead {
		c.running++
	}
	c.mu.Unlock()
	if lead {
		go c.run()
	}
	<-m.done
	return m.err
}

// run sends groups while Updates are waiting.
func (c *committer) run() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.running--
			c.mu.Unlock()
			return
		}
		n := min(len(c.queue), c.maxSize)
		group := make([]*member, n)
		copy(group, c.queue)
		c.queue = append(c.queue[:0], c.queue[n:]...)
		c.mu.Unlock()
		c.send(group)
		for _, m := range group {
			close(m.done)
		}
	}
}

// send commits one group and sets each member's outcome.
func (c *committer) send(group []*member) {
	setAll := func(err error) {
		for _, m := range group {
			m.err = err
		}
	}
	ctx := context.Background()
	start := time.Now()
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		setAll(errAlone) // each tries on its own and reports its own failure
		return
	}
	conn := pc.Conn()
	// A server that stops answering holds the group until this closes its socket.
	watchdog := time.AfterFunc(c.stall, func() { _ = conn.PgConn().Conn().Close() })
	defer func() {
		if !watchdog.Stop() {
			_ = conn.Close(ctx)
		}
		pc.Release()
	}()
	b := &pgx.Batch{}
	b.Queue(beginSQL)
	for _, m := range group {
		for _, w := range m.writes {
			// A fresh QueuedQuery: one that was sent carries what pgx learnt on that connection.
			b.Queue(w.SQL, w.Arguments...)
		}
	}
	b.Queue("commit")
	br := conn.SendBatch(ctx, b)
	refused := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe)
	}
	// The failure of BEGIN or of a write, if any: the server skipped the rest, COMMIT included.
	var failed error
	if _, err := br.Exec(); err != nil {
		failed = err
		setAll(errAlone)
	}
	for _, m := range group {
		if failed != nil {
			break
		}
		for range m.writes {
			if _, err := br.Exec(); err != nil {
				failed = err
				setAll(errAlone)
				m.err = errRerun
				break
			}
		}
	}
	var tag pgconn.CommandTag
	if failed == nil {
		tag, err = br.Exec()
	}
	cerr := br.Close()
	if err == nil && failed == nil && tag.String() == "COMMIT" {
		// "COMMIT" arrived: the group committed, whatever became of the connection.
		if cerr != nil {
			_ = conn.Close(ctx)
		}
		setAll(nil)
		if c.onCommit != nil {
			c.onCommit(len(group), time.Since(start))
		}
		return
	}
	if err == nil {
		err = cerr
	}
	switch {
	case failed != nil && refused(failed):
		// The transaction is aborted, not gone: end it before the connection goes back.
		if _, err := conn.Exec(ctx, "rollback"); err != nil {
			_ = conn.Close(ctx)
		}
	case failed != nil && pgconn.SafeToRetry(failed):
		// Nothing was sent: each tries on its own.
		_ = conn.Close(ctx)
		setAll(errAlone)
	case failed != nil:
		// The connection broke with the whole pipeline sent: the server may have run it all.
		_ = conn.Close(ctx)
		setAll(commitFailure(failed, false))
	case err != nil:
		// COMMIT was sent and its answer lost: whether the group committed is unknown.
		_ = conn.Close(ctx)
		setAll(commitFailure(err, false))
	default:
		setAll(fmt.Errorf("postgres: commit: %w", pgx.ErrTxCommitRollback))
	}
}
