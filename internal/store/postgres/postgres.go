package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func migrationsFS() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// Options tune Open. The zero value is ready to use.
type Options struct {
	// MaxConns is the size of the connection pool. Default: 32 (PostgreSQL group-commits
	// concurrent transactions in its WAL flush, so more connections mean more durable
	// Updates per fsync, up to the CPU).
	MaxConns int32
	// Schema, when set, is the search_path of every connection: the store's tables live in
	// it. It must exist. Tests use a fresh schema each to stay apart.
	Schema string
	// MaxAttempts bounds how many times Update runs fn when the transaction hits a
	// serialization failure (40001) or a deadlock (40P01). Default: 10.
	MaxAttempts int
	// OnCommit, when set, is told of every commit, how many Updates it carried and how long it
	// took.
	OnCommit func(n int, d time.Duration)
	// CommitGroups is how many transactions carrying the writes of several Updates (commit.go)
	// may be in flight at once. Default: 2. Negative: every Update commits alone.
	CommitGroups int
	// RetryFor bounds how long an Update or a read waits for a lost database to come back (a
	// failover) when its context has no earlier deadline. Default: 30s.
	RetryFor time.Duration
	// StallTimeout is how long one try of an Update or of a read may wait for the database
	// before its connection is taken as lost and closed (a server stopped without resetting
	// its connections). Default: 10s.
	StallTimeout time.Duration
	// RequireSyncStandby refuses every Update (store.ErrNoSyncStandby, a 503) while the
	// primary has no synchronous standby streaming: for operators who would rather stop than
	// keep a single copy of what they acknowledge. The role is read at most once a second.
	RequireSyncStandby bool
	// OnLost, when set, is told each time the pool's connections are dropped because one
	// found its server gone.
	OnLost func()

	tracer pgx.QueryTracer // tests: sees every statement and batch sent
}

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = 32
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.CommitGroups == 0 {
		o.CommitGroups = 2
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 30 * time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 10 * time.Second
	}
	return o
}

// Store is the PostgreSQL store. It implements store.Store.
type Store struct {
	opts   Options
	pool   *pgxpool.Pool
	reads  *reader    // on the pool: View and the Exporter
	group  *committer // Updates committed together (commit.go); nil: each alone
	closed atomic.Bool
	once   sync.Once

	lastReset atomic.Int64 // unix nanoseconds of the last dropStale
	role      atomic.Pointer[timedRole]
	server    atomic.Pointer[string] // the server the pool's newest connection reached (identity.go)
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value DSN), applies
// pending migrations and returns the store.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors leave the password out.
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg.MaxConns = opts.MaxConns
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	// Update promises an fsync-durable commit whatever the server's default.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	cfg.ConnConfig.Tracer = opts.tracer
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	cfg.ConnConfig.DialFunc = dialer(cfg.ConnConfig.ConnectTimeout)
	// pgxpool pings a connection idle for more than a second before handing it out; a
	// connection whose server is gone is pinged (and dropped) whatever its idle time.
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		return p.IdleDuration > time.Second || !alive(p.Conn.PgConn().Conn())
	}
	st := &Store{opts: opts}
	cfg.AfterConnect = st.afterConnect
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	st.pool, st.reads = pool, newReader(pool, false)
	if opts.CommitGroups > 0 {
		st.group = &committer{
			pool: pool, onCommit: opts.OnCommit, maxGroups: opts.CommitGroups, maxSize: 256,
			stall: opts.StallTimeout,
		}
	}
	return st, nil
}

// Dialect returns "postgres".
func (s *Store) Dialect() string { return "postgres" }

// Ping checks the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return mark(s.pool.Ping(ctx))
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.pool.Close()
	})
	return nil
}

// View runs fn with plain pooled queries: each read sees the data committed when it starts.
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return fn(retryingReader{s})
}

// Update runs fn in one READ COMMITTED transaction and commits it. On a serialization
// failure or a deadlock the whole transaction is rolled back and fn runs again, up to
// MaxAttempts times, after a short jittered pause. When the database is lost before COMMIT is
// sent, fn runs again once it answers, and when it is lost after, the outcome is looked up
// (failover.go); both within the budget (ctx's deadline, else RetryFor).
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.refuseWrites(ctx); errors.Is(err, store.ErrNoSyncStandby) {
		return err // at once: waiting for a standby is the operator's call, not the request's
	}
	deferWrites := true
	var wait budget
	for attempt := 1; ; attempt++ {
		if s.closed.Load() {
			return store.ErrClosed
		}
		err := s.attempt(ctx, fn, deferWrites)
		if errors.Is(err, errRerun) {
			// A deferred write failed: run fn again, each write on its own, so that it sees
			// the failure where it made the write. This is not a retry: it does not count.
			deferWrites = false
			attempt--
			continue
		}
		if u := (*unknownOutcome)(nil); errors.As(err, &u) {
			s.dropStale()
			committed, err := s.resolve(ctx, u, &wait)
			if err != nil || committed {
				return err
			}
			attempt--
			continue
		}
		if lost(err) && !errors.Is(err, store.ErrClosed) {
			if ctx.Err() != nil {
				return mark(err) // the caller gave up waiting: still the store's failure
			}
			// Before COMMIT was sent: nothing was kept.
			s.dropStale()
			if !s.pause(ctx, &wait) {
				return mark(err)
			}
			attempt--
			continue
		}
		if err == nil || !retryable(err) || attempt >= s.opts.MaxAttempts {
			return err
		}
		// 1ms, 2ms, 4ms ... capped at 50ms; a random half to full of it.
		d := min(time.Millisecond<<(attempt-1), 50*time.Millisecond)
		d = d/2 + rand.N(d/2+1)
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
	}
}

// errRerun is what attempt returns when a deferred write failed.
var errRerun = errors.New("postgres: re-run without deferred writes")

func (s *Store) attempt(ctx context.Context, fn func(store.Tx) error, deferWrites bool) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	sess := &session{pool: s.pool, deferWrites: deferWrites}
	// A server that stops answering without closing the connection holds the attempt until
	// the watchdog closes it (failover.go).
	watchdog := time.AfterFunc(s.opts.StallTimeout, sess.abandon)
	t := newTx(sess, 0, nil)
	committed := false
	defer func() {
		watchdog.Stop()
		t.finished.Store(true)
		if !committed {
			// Also on a panic in fn, which then carries on up the caller's stack.
			sess.rollback(context.WithoutCancel(ctx))
		}
		sess.release()
		if u := (*unknownOutcome)(nil); errors.As(err, &u) {
			u.acts = sess.written()
		}
	}()
	err = fn(t)
	if err != nil && len(sess.pending) > 0 {
		// fn may have failed on what a deferred write seemed to answer (nil): its failure
		// holds only if they all succeed. Send them, with the ROLLBACK, to find out.
		_, _ = sess.Exec(context.WithoutCancel(ctx), "rollback")
	}
	if sess.deferErr != nil {
		// What fn saw after the failed write is not what the database holds.
		return errRerun
	}
	if err != nil {
		return err
	}
	if s.group != nil && sess.mergeable() {
		// Nothing but BEGIN, the writes and COMMIT is owed: commit with other Updates (commit.go).
		watchdog.Stop()
		sess.release()
		switch err := s.group.commit(sess.pending); {
		case err == nil:
			sess.pending = nil
			committed = true
			return nil
		case errors.Is(err, errRerun):
			return errRerun
		case !errors.Is(err, errAlone):
			sess.pending = nil
			if u := (*unknownOutcome)(nil); errors.As(err, &u) {
				return &unknownOutcome{cause: u.cause} // the group's members share err
			}
			return err
		}
		// errAlone: the committer sent copies of the writes; they are still owed.
		watchdog.Reset(s.opts.StallTimeout)
	}
	// The commit must not be cut off half-way by the caller's context: its outcome would be
	// unknown. The watchdog still closes a connection that stops answering.
	start := time.Now()
	if err := sess.commit(context.WithoutCancel(ctx)); err != nil {
		if sess.deferErr != nil {
			return errRerun
		}
		if u := (*unknownOutcome)(nil); errors.As(err, &u) {
			return err
		}
		return fmt.Errorf("postgres: commit: %w", err)
	}
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(1, time.Since(start))
	}
	committed = true
	return nil
}

// retryable reports a serialization failure or a deadlock anywhere in err's chain.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

func uniqueViolation(err error) (*pgconn.PgError, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe, true
	}
	return nil, false
}

func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := sqlcore.Migrations(migrationsFS())
	if err != nil {
		return err
	}
	// One advisory lock per schema serializes processes migrating the same tables at once.
	h := fnv.New64a()
	h.Write([]byte("latchkey.migrate:" + schema))
	lock := int64(h.Sum64())
	for _, m := range ms {
		if err := applyMigration(ctx, pool, lock, m); err != nil {
			return err
		}
	}
	return tune(ctx, pool, lock)
}

// tune sets what only PostgreSQL itself knows (not the servers that speak its protocol), under
// the migration lock, when it is not set yet.
//
// An activity row is about 2.2 KB, just over the ~2 KB past which PostgreSQL compresses a row's
// large values before storing it (pglz); that compression was 8% of PostgreSQL's CPU in a
// signing run, to save 0.6 KB of a row that fits a page either way. toast_tuple_target (≥ 11)
// raises that size for the activities table to what a page holds.
func tune(ctx context.Context, pool *pgxpool.Pool, lock int64) error {
	var version string
	if err := pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return fmt.Errorf("postgres: server version: %w", err)
	}
	if !strings.HasPrefix(version, "PostgreSQL ") {
		return nil
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lock); err != nil {
			return fmt.Errorf("postgres: migration lock: %w", err)
		}
		var set bool
		if err := tx.QueryRow(ctx, `SELECT coalesce('toast_tuple_target=8160' = ANY (reloptions), false)
			FROM pg_class WHERE oid = 'activities'::regclass`).Scan(&set); err != nil {
			return fmt.Errorf("postgres: activities storage: %w", err)
		}
		if set {
			return nil
		}
		if _, err := tx.Exec(ctx, "ALTER TABLE activities SET (toast_tuple_target = 8160)"); err != nil {
			return fmt.Errorf("postgres: activities storage: %w", err)
		}
		return nil
	})
}

func applyMigration(ctx context.Context, pool *pgxpool.Pool, lock int64, m sqlcore.Migration) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lock); err != nil {
			return fmt.Errorf("postgres: migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    BIGINT NOT NULL PRIMARY KEY,
			applied_at BIGINT NOT NULL)`); err != nil {
			return fmt.Errorf("postgres: create schema_migrations: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE version = $1", m.Version).Scan(&n); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.Name, err)
		}
		if n > 0 {
			return nil
		}
		// No arguments: pgx uses the simple protocol, which runs every statement of the file.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
			m.Version, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("postgres: migration %s: record: %w", m.Name, err)
		}
		return nil
	})
}

// CountKind counts the records of kind in every organization (the operator dashboard's totals).
func (s *Store) CountKind(ctx context.Context, kind string) (int, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM records WHERE kind = $1", kind).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count %s: %w", kind, err)
	}
	return n, nil
}
