package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkey/latchkey/internal/store"
)

// Failover. When the primary dies, is stopped, or is demoted and a standby is promoted, every
// statement in flight fails or hangs. A failure that provably happened before COMMIT was sent
// (the connection was refused or lost, the server was shutting down, or it was read-only) left
// nothing behind: Update runs its function again, and a read runs again, with a jittered
// backoff, until the store answers or the budget (the context's deadline, else
// Options.RetryFor) runs out; the pool's idle connections to the lost server are dropped at
// once. A statement or commit that gets no answer within Options.StallTimeout has its
// connection closed, so a server that stopped without resetting its connections costs seconds.
//
// A COMMIT whose answer was lost (the connection died after it was sent) may or may not have
// committed. The attempt knows the activities it wrote; once the store answers again, Update
// reads them back by id: present with the bytes it wrote, the transaction committed (and Update
// makes sure it is replicated before it says so); absent, it did not, and fn runs again (an
// activity's fingerprint stops a second copy in any case). Only when the store does not come
// back within the budget, or the transaction wrote no activity to look for, does Update return
// store.ErrOutcomeUnknown.

// lost reports whether err is a failure of the database or of the connection to it, not of
// the statement: the statement was not carried out because the server could not run it.
func lost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, store.ErrUnavailable) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, crash, cannot connect now
			return true
		case pe.Code == "25006": // read_only_sql_transaction: a standby, or a demoted primary
			return true
		case pe.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, context.DeadlineExceeded)
}

// mark classifies err: a lost store becomes store.ErrUnavailable; anything else is returned as
// it is.
func mark(err error) error {
	if lost(err) {
		return store.Unavailable(err)
	}
	return err
}

// markErr is mark for a deferred call on a named result.
func markErr(err *error) { *err = mark(*err) }

// unknownOutcome is an attempt whose COMMIT was sent and whose answer was lost.
type unknownOutcome struct {
	cause error
	acts  []store.Activity // what the attempt wrote, last write of each id
}

func (u *unknownOutcome) Error() string {
	return "postgres: commit: outcome unknown: " + u.cause.Error()
}

func (u *unknownOutcome) Unwrap() error { return u.cause }

// commitFailure classifies the failure of a pipeline that carried a COMMIT: refused (a
// server's answer to a statement before COMMIT, or nothing sent at all) is returned marked;
// anything else leaves the outcome unknown.
func commitFailure(err error, beforeCommit bool) error {
	var pe *pgconn.PgError
	if pgconn.SafeToRetry(err) || (beforeCommit && errors.As(err, &pe)) {
		return mark(err)
	}
	if errors.As(err, &pe) && (retryable(err) || strings.HasPrefix(pe.Code, "23")) {
		return err // COMMIT refused: nothing was kept
	}
	return &unknownOutcome{cause: err}
}

// budget is how long a caller waits for a lost store to come back, from the first loss.
type budget struct {
	until time.Time
	tries int
}

// pause waits before the next try, or returns false when the budget or ctx is spent.
func (s *Store) pause(ctx context.Context, b *budget) bool {
	now := time.Now()
	if b.until.IsZero() {
		b.until = now.Add(s.opts.RetryFor)
		if d, ok := ctx.Deadline(); ok && d.Before(b.until) {
			b.until = d
		}
	}
	left := b.until.Sub(now)
	if left <= 0 || ctx.Err() != nil {
		return false
	}
	// 10ms, 20ms ... capped at 500ms; a random half to full of it.
	d := min(10*time.Millisecond<<min(b.tries, 6), 500*time.Millisecond)
	b.tries++
	d = min(d/2+rand.N(d/2+1), left)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// dropStale drops the pool's connections (idle ones now, busy ones when they are returned): one
// failed because its server went away, so the others likely reach that server too. At most
// once per 100ms.
func (s *Store) dropStale() {
	now := time.Now().UnixNano()
	last := s.lastReset.Load()
	if now-last < int64(100*time.Millisecond) || !s.lastReset.CompareAndSwap(last, now) {
		return
	}
	if s.opts.OnLost != nil {
		s.opts.OnLost()
	}
	s.pool.Reset()
}

// resolve finds out whether the attempt whose COMMIT outcome u is unknown committed: true
// (committed and replicated), false (it did not: run it again), or store.ErrOutcomeUnknown when
// the store does not answer within the budget or the attempt wrote nothing to look for.
func (s *Store) resolve(ctx context.Context, u *unknownOutcome, b *budget) (bool, error) {
	if len(u.acts) == 0 {
		return false, store.OutcomeUnknown(u.cause)
	}
	for {
		committed, err := s.committed(ctx, u.acts)
		if err == nil {
			return committed, nil
		}
		if !lost(err) {
			return false, err
		}
		s.dropStale()
		if !s.pause(ctx, b) {
			return false, store.OutcomeUnknown(u.cause)
		}
	}
}

// committed reads back the activities an attempt wrote.
func (s *Store) committed(ctx context.Context, acts []store.Activity) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StallTimeout)
	defer cancel()
	for _, a := range acts {
		got, err := s.reads.GetActivity(ctx, a.ID)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if got.Status != a.Status || got.Fingerprint != a.Fingerprint || !bytes.Equal(got.Data, a.Data) {
			// Another transaction changed it since, or this one never wrote it: running fn
			// again meets what is there.
			return false, nil
		}
	}
	// The row may be on a primary that crashed before its standby had it and came back:
	// a synchronous commit now waits until the standby has everything up to here.
	return true, s.replicated(ctx)
}

// qReplicated is the smallest write there is: one row rewritten as it is. PostgreSQL waits
// for its synchronous standbys only at the commit of a transaction that wrote WAL before its
// commit record (an id alone is not enough).
const qReplicated = `UPDATE schema_migrations SET applied_at = applied_at
	WHERE version = (SELECT min(version) FROM schema_migrations)`

// replicated commits a write with synchronous_commit on: it returns once every synchronous
// standby has flushed the WAL up to it, which holds every change committed before on this
// server.
func (s *Store) replicated(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return mark(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, qReplicated); err != nil {
		return mark(err)
	}
	return mark(tx.Commit(ctx))
}

// Replicated returns once everything committed on this server so far is on its synchronous
// standbys (at once when there are none): an answer built from a row read back (a request
// sent again, answered from the activity it made) must not outlive the server it was read
// from. See store.Replicator.
func (s *Store) Replicated(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	ctx, cancelAll := context.WithTimeout(ctx, s.opts.RetryFor) // a standby away holds each try
	defer cancelAll()
	var b budget
	for {
		rctx, cancel := context.WithTimeout(ctx, s.opts.StallTimeout)
		err := s.replicated(rctx)
		cancel()
		if err == nil || !lost(err) {
			return err
		}
		s.dropStale()
		if !s.pause(ctx, &b) {
			return err
		}
	}
}

// retryingReader is View's Reader: each read runs again while the store is lost, within the
// budget, each try bounded by StallTimeout. Reads are idempotent; fn itself is never re-run.
type retryingReader struct {
	s *Store
}

var _ store.Reader = retryingReader{}

func retryRead[T any](ctx context.Context, s *Store, read func(context.Context) (T, error)) (T, error) {
	var b budget
	for {
		rctx, cancel := context.WithTimeout(ctx, s.opts.StallTimeout)
		v, err := read(rctx)
		cancel()
		if err != nil && s.closed.Load() {
			return v, errors.Join(store.ErrClosed, err)
		}
		if err == nil || !lost(err) || ctx.Err() != nil {
			return v, mark(err)
		}
		s.dropStale()
		if !s.pause(ctx, &b) {
			return v, mark(err)
		}
	}
}

func (r retryingReader) Get(ctx context.Context, kind, id string) (store.Record, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) (store.Record, error) { return r.s.reads.Get(ctx, kind, id) })
}

func (r retryingReader) List(ctx context.Context, kind, orgID string, o store.ListOptions) ([]store.Record, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) ([]store.Record, error) {
		return r.s.reads.List(ctx, kind, orgID, o)
	})
}

func (r retryingReader) Count(ctx context.Context, kind, orgID string, atMost int) (int, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) (int, error) {
		return r.s.reads.Count(ctx, kind, orgID, atMost)
	})
}

func (r retryingReader) Lookup(ctx context.Context, name, value string) ([]store.Ref, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) ([]store.Ref, error) {
		return r.s.reads.Lookup(ctx, name, value)
	})
}

func (r retryingReader) GetActivity(ctx context.Context, id string) (store.Activity, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) (store.Activity, error) {
		return r.s.reads.GetActivity(ctx, id)
	})
}

func (r retryingReader) GetActivityByFingerprint(ctx context.Context, fp string) (store.Activity, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) (store.Activity, error) {
		return r.s.reads.GetActivityByFingerprint(ctx, fp)
	})
}

func (r retryingReader) ListActivities(
	ctx context.Context,
	orgID string,
	f store.ActivityFilter,
) ([]store.Activity, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) ([]store.Activity, error) {
		return r.s.reads.ListActivities(ctx, orgID, f)
	})
}

func (r retryingReader) ListActivityHeads(
	ctx context.Context,
	orgID string,
	f store.ActivityFilter,
) ([]store.ActivityHead, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) ([]store.ActivityHead, error) {
		return r.s.reads.ListActivityHeads(ctx, orgID, f)
	})
}

func (r retryingReader) CountActivities(ctx context.Context, orgID string, f store.ActivityFilter) (int, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) (int, error) {
		return r.s.reads.CountActivities(ctx, orgID, f)
	})
}

// DatabaseNow is the server's clock (store.DatabaseClock).
func (r retryingReader) DatabaseNow(ctx context.Context) (time.Time, error) {
	return retryRead(ctx, r.s, func(ctx context.Context) (time.Time, error) { return databaseNow(ctx, r.s.reads.q) })
}

// DatabaseNow is the server's clock (store.DatabaseClock), read in the transaction.
func (t *tx) DatabaseNow(ctx context.Context) (_ time.Time, err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return time.Time{}, err
	}
	return databaseNow(ctx, t.s)
}

func databaseNow(ctx context.Context, q querier) (time.Time, error) {
	var now time.Time
	rows, err := q.Query(ctx, "SELECT clock_timestamp()") // a plain read: no BEGIN owed for it
	if err := (row{rows, err}).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("postgres: clock: %w", err)
	}
	return now.UTC(), nil
}
