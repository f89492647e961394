package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options tune Open. The zero value is ready to use.
type Options struct {
	// ReadConns is the size of the read-only connection pool behind View. Default:
	// max(4, 2*GOMAXPROCS).
	ReadConns int
	// BusyTimeout is how long a statement waits for a lock held by another process (say, a
	// second latchkey binary opened on the same file) before failing. Default: 5s.
	BusyTimeout time.Duration
	// MaxBatch caps how many Updates share one transaction and one fsync. Default: 512.
	MaxBatch int
	// MaxLinger is how long, in all, the writer may wait for more Updates before committing
	// a batch when the batch before it carried more than one (concurrent load); a lone Update
	// is committed at once. Negative: never wait. Default: 1ms.
	MaxLinger time.Duration
	// QueueLength is how many Updates may wait for the writer before Update blocks on
	// enqueueing. Default: 4 * MaxBatch.
	QueueLength int
	// CheckpointEvery is how often the background checkpointer copies the WAL into the
	// database file. Default: 250ms.
	CheckpointEvery time.Duration
	// OnCommit, when set, is told of every durable commit: how many Updates it carried and how
	// long the COMMIT (with its fsync) took (metrics).
	OnCommit func(n int, d time.Duration)
}

func (o Options) withDefaults() Options {
	if o.ReadConns <= 0 {
		o.ReadConns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.MaxLinger == 0 {
		o.MaxLinger = time.Millisecond
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 250 * time.Millisecond
	}
	if o.QueueLength <= 0 {
		o.QueueLength = 4 * o.MaxBatch
	}
	return o
}

// Store is the SQLite store. It implements store.Store.
type Store struct {
	opts   Options
	wdb    *sql.DB // one connection, held by the writer
	rdb    *sql.DB // read-only pool
	reads  *reader
	w      *writer
	mu     sync.RWMutex // held for reading while enqueueing; Close takes it to stop enqueues
	closed atomic.Bool
	once   sync.Once

	cdb      *sql.DB // the background checkpointer's connection
	hdb      *sql.DB // Ping's and Role's own connection: never waits behind the read pool
	ckptQuit chan struct{}
	ckptDone chan struct{}
	cerr     error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if missing) the database file at path, applies pending migrations and
// starts the writer.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("sqlite: %q is not a plain database file path", path)
	}
	// Create the file private to its owner: it holds (sealed) secrets and their metadata.
	// SQLite gives the -wal and -shm files the same mode.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("sqlite: create database file: %w", err)
	} else {
		f.Close()
	}
	busy := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
	common := path + "?_busy_timeout=" + busy + "&_foreign_keys=0"
	// temp_store=MEMORY keeps savepoint journals off disk (a write syscall per page otherwise);
	// an 8 MB page cache (twice the default) keeps hot index pages in memory. Not more: a B-tree
	// split that reorders sibling pages parks one, for a moment, at the lock-byte page number
	// (page 262,145 of 4 KB pages), and the commit after it then walks the connection's whole
	// page cache to drop pages past the end of the file; with 32 MB that walk cost 5-10% of
	// the writer's time. The writer checkpoints only as a backstop (10,000 pages); a background
	// checkpointer on its own connection keeps the WAL short without taking the writer's time.
	wdb, err := sql.Open(
		"sqlite",
		common+"&_journal_mode=WAL&_synchronous=FULL&_pragma=temp_store(MEMORY)&_pragma=cache_size(-8000)&_pragma=wal_autocheckpoint(10000)",
	)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	fail := func(err error) (*Store, error) {
		conn.Close()
		wdb.Close()
		return nil, err
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fail(fmt.Errorf("sqlite: read journal mode: %w", err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("sqlite: journal mode is %q, want wal", mode))
	}
	if err := migrate(ctx, conn); err != nil {
		return fail(err)
	}
	rdb, err := sql.Open("sqlite", common+"&_query_only=1")
	if err != nil {
		return fail(fmt.Errorf("sqlite: open readers: %w", err))
	}
	rdb.SetMaxOpenConns(opts.ReadConns)
	rdb.SetMaxIdleConns(opts.ReadConns)
	rdb.SetConnMaxLifetime(0)
	rdb.SetConnMaxIdleTime(0)

	w, err := newWriter(ctx, conn, opts)
	if err != nil {
		rdb.Close()
		return fail(err)
	}
	s := &Store{
		opts:  opts,
		wdb:   wdb,
		rdb:   rdb,
		reads: newReader(&queries{cache: newStmtCache(rdb)}),
		w:     w,
	}
	cdb, err := sql.Open("sqlite", common)
	if err != nil {
		rdb.Close()
		return fail(fmt.Errorf("sqlite: open checkpointer: %w", err))
	}
	cdb.SetMaxOpenConns(1)
	s.cdb, s.ckptQuit, s.ckptDone = cdb, make(chan struct{}), make(chan struct{})
	hdb, err := sql.Open("sqlite", common+"&_query_only=1")
	if err != nil {
		rdb.Close()
		cdb.Close()
		return fail(fmt.Errorf("sqlite: open the health connection: %w", err))
	}
	hdb.SetMaxOpenConns(1)
	s.hdb = hdb
	go w.run()
	go s.checkpoint(opts.CheckpointEvery)
	return s, nil
}

// checkpoint copies the WAL back into the database file in the background (PASSIVE: it never
// blocks the writer or readers), so the writer's own auto-checkpoint rarely fires.
func (s *Store) checkpoint(every time.Duration) {
	defer close(s.ckptDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ckptQuit:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = s.cdb.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			cancel()
		}
	}
}

// Dialect returns "sqlite".
func (s *Store) Dialect() string { return "sqlite" }

// Ping checks the file can be read, on a connection of its own: a read pool busy with long
// pages does not make the store look unreachable (/readyz, the health page).
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	var one int
	if err := s.hdb.QueryRowContext(ctx, "SELECT 1 FROM sqlite_master LIMIT 1").Scan(&one); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return store.Unavailable(fmt.Errorf("sqlite: ping: %w", err))
	}
	return nil
}

// Role is the process's own file, writable when it can be read (store.RoleReader).
func (s *Store) Role(ctx context.Context) (store.Role, error) {
	if err := s.Ping(ctx); err != nil {
		return store.Role{}, err
	}
	return store.Role{Role: "embedded", Writable: true, Standbys: -1, SyncStandbys: -1}, nil
}

// View runs fn over committed data, on the read-only pool. Each read sees the data committed
// when it starts.
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return fn(s.reads)
}

// Update queues fn for the writer, which runs it inside a savepoint of the batch transaction
// it is building, and returns after that transaction is durably committed. See the package
// documentation.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &job{ctx: ctx, fn: fn, done: make(chan struct{})}
	s.mu.RLock()
	if s.closed.Load() {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	select {
	case s.w.jobs <- j:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return ctx.Err()
		}
		// The writer has taken it: its outcome (committed or not) is what we report.
		<-j.done
	}
	if j.panicked {
		panic(j.panicVal)
	}
	return j.err
}

// Close waits for queued Updates to finish, then closes the database. Later calls return
// store.ErrClosed.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed.Store(true)
		s.mu.Unlock()
		close(s.w.quit)
		<-s.w.stopped
		close(s.ckptQuit)
		<-s.ckptDone
		s.cerr = errors.Join(s.w.close(), s.reads.q.cache.close(), s.wdb.Close(), s.rdb.Close(), s.cdb.Close(),
			s.hdb.Close())
	})
	return s.cerr
}

func migrate(ctx context.Context, conn *sql.Conn) error {
	ms, err := sqlcore.Migrations(mustSub(migrationFiles))
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := applyMigration(ctx, conn, m); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, m sqlcore.Migration) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: migration %s: begin: %w", m.Name, err)
	}
	defer func() {
		if err != nil {
			conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
	}
	if n > 0 {
		_, err = conn.ExecContext(ctx, "COMMIT")
		return err
	}
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
		m.Version, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("sqlite: migration %s: record: %w", m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlite: migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// CountKind counts the records of kind in every organization (the operator dashboard's totals).
func (s *Store) CountKind(ctx context.Context, kind string) (int, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	n, err := s.reads.CountRows(ctx, "SELECT count(*) FROM records WHERE kind = ?", kind)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count %s: %w", kind, err)
	}
	return n, nil
}

// Backup writes a consistent snapshot of the database to path while the store serves (SQLite's
// VACUUM INTO, a read transaction on the checkpointer's connection, since the read pool is
// query-only: writers carry on), then makes it readable by its owner only.
// path must not exist.
func (s *Store) Backup(ctx context.Context, path string) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	// Created empty and owner-only first (VACUUM INTO fills an empty file), so the snapshot is
	// never readable by others, not even while it is written.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w (give a new file)", err)
	}
	f.Close()
	if _, err := s.cdb.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		os.Remove(path)
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return nil
}
