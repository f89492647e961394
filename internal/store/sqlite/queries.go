package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"sync"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

func mustSub(f fs.FS) fs.FS {
	sub, err := fs.Sub(f, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// db is what both *sql.DB (the read pool) and *sql.Conn (the writer) offer.
type db interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// maxCachedStmts bounds the prepared statements kept per cache; the query shapes are few
// (the IN lists of activity filters are what varies), past the bound queries run unprepared.
const maxCachedStmts = 256

// stmtCache keeps prepared statements by SQL text.
type stmtCache struct {
	db db
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(d db) *stmtCache { return &stmtCache{db: d, m: map[string]*sql.Stmt{}} }

// stmt returns the prepared statement for query, or nil when the cache is full.
func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxCachedStmts {
		return nil, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// queries runs SQL through a stmtCache. The writer's queries run with a background context
// after checking the caller's: a cancelled context then cannot interrupt a statement of the
// shared batch transaction (and the driver starts no watcher goroutine per statement).
type queries struct {
	cache      *stmtCache
	background bool
}

func (q *queries) ctx(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.background {
		return context.Background(), nil
	}
	return ctx, nil
}

func (q *queries) query(ctx context.Context, query string, args ...any) (_ *sql.Rows, err error) {
	defer func() { err = mark(err) }()
	ctx, err = q.ctx(ctx)
	if err != nil {
		return nil, err
	}
	st, err := q.cache.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return q.cache.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a query returning at most one row and scans it with scan; sql.ErrNoRows when
// there is none.
func (q *queries) queryRow(ctx context.Context, scan func(*sql.Rows) error, query string, args ...any) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := scan(rows); err != nil {
		return err
	}
	return rows.Close()
}

func (q *queries) exec(ctx context.Context, query string, args ...any) (_ sql.Result, err error) {
	defer func() { err = mark(err) }()
	ctx, err = q.ctx(ctx)
	if err != nil {
		return nil, err
	}
	st, err := q.cache.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return q.cache.db.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// isUniqueViolation reports a PRIMARY KEY or UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var e *sqlitedrv.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

const (
	qUniqueOwner          = "SELECT kind, id FROM record_keys WHERE name = ? AND value = ? AND uniq"
	qInsertRecord         = "INSERT INTO records (kind, id, org_id, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
	qInsertOrIgnoreRecord = "INSERT OR IGNORE INTO records (kind, id, org_id, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
	qUpsertRecord         = qInsertRecord + " ON CONFLICT (kind, id) DO UPDATE SET org_id = excluded.org_id, data = excluded.data, " + sqlcore.KeepCreatedAt + ", updated_at = excluded.updated_at"
	qDeleteKeys           = "DELETE FROM record_keys WHERE kind = ? AND id = ?"
	qInsertKey            = "INSERT INTO record_keys (name, value, kind, id, org_id, uniq) VALUES (?, ?, ?, ?, ?, ?)"
	qDeleteRecord         = "DELETE FROM records WHERE kind = ? AND id = ?"
	qUpsertActivity       = "INSERT INTO activities (id, org_id, fingerprint, status, type, created_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET org_id = excluded.org_id, fingerprint = excluded.fingerprint, status = excluded.status, type = excluded.type, created_at = excluded.created_at, updated_at = excluded.updated_at, data = excluded.data"
	qSavepointWrite       = "SAVEPOINT w"
	qRollbackToWrite      = "ROLLBACK TO w"
	qReleaseWrite         = "RELEASE w"
	qSavepointJob         = "SAVEPOINT j"
	qRollbackToJob        = "ROLLBACK TO j"
	qReleaseJob           = "RELEASE j"
	qBeginImmediate       = "BEGIN IMMEDIATE"
	qCommit               = "COMMIT"
	qRollback             = "ROLLBACK"
)

var readQueries = sqlcore.Queries(sqlcore.Question)

// conn is the sqlcore.Conn of queries.
type conn struct{ q *queries }

func (c conn) Query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := c.q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := sqlcore.EachRow(rows.Next, rows.Scan, rows.Err, row); err != nil {
		return mark(err)
	}
	return mark(rows.Close())
}

// reader implements store.Reader over queries: the read pool in View, the writer's
// transaction in Update.
type reader struct {
	sqlcore.Reader
	q *queries
}

func newReader(q *queries) *reader {
	return &reader{q: q, Reader: sqlcore.Reader{
		Conn: conn{q}, Driver: "sqlite", Ph: sqlcore.Question, Queries: readQueries,
		NoLimit: -1, // LIMIT -1: no limit
	}}
}
