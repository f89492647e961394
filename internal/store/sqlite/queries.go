package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/latchkey/latchkey/internal/store"
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

func (q *queries) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, err := q.ctx(ctx)
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

func (q *queries) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, err := q.ctx(ctx)
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
	qGetRecord            = "SELECT " + sqlcore.RecordColumns + " FROM records WHERE kind = ? AND id = ?"
	qCountRecords         = "SELECT count(*) FROM (SELECT 1 FROM records WHERE kind = ? AND org_id = ? LIMIT ?)"
	qLookup               = "SELECT kind, id, org_id FROM record_keys WHERE name = ? AND value = ?"
	qUniqueOwner          = "SELECT kind, id FROM record_keys WHERE name = ? AND value = ? AND uniq"
	qGetActivity          = "SELECT " + sqlcore.ActivityColumns + " FROM activities WHERE id = ?"
	qGetActivityByFP      = "SELECT " + sqlcore.ActivityColumns + " FROM activities WHERE fingerprint = ? AND status <> '" + store.ActivityStatusFailed + "'"
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

type scanner interface{ Scan(dest ...any) error }

func scanRecord(sc scanner) (store.Record, error) {
	var r store.Record
	var c, u int64
	if err := sc.Scan(&r.Kind, &r.ID, &r.OrgID, &r.Data, &c, &u); err != nil {
		return store.Record{}, err
	}
	r.CreatedAt, r.UpdatedAt = sqlcore.Time(c), sqlcore.Time(u)
	return r, nil
}

func scanActivity(sc scanner) (store.Activity, error) {
	var a store.Activity
	var fp sql.NullString
	var c, u int64
	if err := sc.Scan(&a.ID, &a.OrgID, &fp, &a.Status, &a.Type, &c, &u, &a.Data); err != nil {
		return store.Activity{}, err
	}
	a.Fingerprint = fp.String
	a.CreatedAt, a.UpdatedAt = sqlcore.Time(c), sqlcore.Time(u)
	return a, nil
}

// reader implements store.Reader over queries: the read pool in View, the writer's
// transaction in Update.
type reader struct {
	q *queries
}

func (r *reader) Get(ctx context.Context, kind, id string) (store.Record, error) {
	var rec store.Record
	err := r.q.queryRow(ctx, func(rows *sql.Rows) (err error) {
		rec, err = scanRecord(rows)
		return err
	}, qGetRecord, kind, id)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Record{}, fmt.Errorf("%w: record %s/%s", store.ErrNotFound, kind, id)
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("sqlite: get record %s/%s: %w", kind, id, err)
	}
	return rec, nil
}

func (r *reader) List(ctx context.Context, kind, orgID string, opts store.ListOptions) ([]store.Record, error) {
	query, args, reversed := sqlcore.ListRecords(sqlcore.Question, kind, orgID, opts)
	rows, err := r.q.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list %s: %w", kind, err)
	}
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list %s: %w", kind, err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list %s: %w", kind, err)
	}
	if reversed {
		sqlcore.Reverse(out)
	}
	return out, nil
}

func (r *reader) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := r.q.queryRow(ctx, func(rows *sql.Rows) error { return rows.Scan(&n) }, query, args...)
	return n, err
}

func (r *reader) Count(ctx context.Context, kind, orgID string, atMost int) (int, error) {
	if atMost <= 0 {
		atMost = -1 // SQLite: no limit
	}
	n, err := r.count(ctx, qCountRecords, kind, orgID, atMost)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count %s: %w", kind, err)
	}
	return n, nil
}

func (r *reader) Lookup(ctx context.Context, name, value string) ([]store.Ref, error) {
	rows, err := r.q.query(ctx, qLookup, name, value)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lookup %s: %w", name, err)
	}
	defer rows.Close()
	var out []store.Ref
	for rows.Next() {
		var ref store.Ref
		if err := rows.Scan(&ref.Kind, &ref.ID, &ref.OrgID); err != nil {
			return nil, fmt.Errorf("sqlite: lookup %s: %w", name, err)
		}
		out = append(out, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: lookup %s: %w", name, err)
	}
	return out, nil
}

func (r *reader) getActivity(ctx context.Context, what, query string, arg string) (store.Activity, error) {
	var a store.Activity
	err := r.q.queryRow(ctx, func(rows *sql.Rows) (err error) {
		a, err = scanActivity(rows)
		return err
	}, query, arg)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Activity{}, fmt.Errorf("%w: activity %s", store.ErrNotFound, what)
	}
	if err != nil {
		return store.Activity{}, fmt.Errorf("sqlite: get activity %s: %w", what, err)
	}
	return a, nil
}

func (r *reader) GetActivity(ctx context.Context, id string) (store.Activity, error) {
	return r.getActivity(ctx, id, qGetActivity, id)
}

func (r *reader) GetActivityByFingerprint(ctx context.Context, fingerprint string) (store.Activity, error) {
	if fingerprint == "" {
		return store.Activity{}, fmt.Errorf("%w: activity with empty fingerprint", store.ErrNotFound)
	}
	return r.getActivity(ctx, "by fingerprint", qGetActivityByFP, fingerprint)
}

func (r *reader) ListActivities(ctx context.Context, orgID string, f store.ActivityFilter) ([]store.Activity, error) {
	query, args, reversed, err := sqlcore.ListActivities(sqlcore.Question, orgID, f)
	if err != nil {
		return nil, err
	}
	rows, err := r.q.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list activities: %w", err)
	}
	defer rows.Close()
	var out []store.Activity
	for rows.Next() {
		a, err := scanActivity(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list activities: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list activities: %w", err)
	}
	if reversed {
		sqlcore.Reverse(out)
	}
	return out, nil
}

func (r *reader) CountActivities(ctx context.Context, orgID string, f store.ActivityFilter) (int, error) {
	query, args, err := sqlcore.CountActivities(sqlcore.Question, orgID, f)
	if err != nil {
		return 0, err
	}
	n, err := r.count(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlite: count activities: %w", err)
	}
	return n, nil
}
