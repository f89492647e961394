package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

// querier is what both the pool (View) and a transaction (Update) offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var readQueries = sqlcore.Queries(sqlcore.Dollar)

const (
	// qInsertRecord inserts the record and, only if it was new, its keys, in one statement
	// that reports conflicts as counts instead of errors (an error would abort the
	// transaction): a zero first count is a duplicate (kind, id); a second count short of the
	// number of keys is a taken unique key, and the caller deletes the new record again.
	qInsertRecord = `WITH r AS (
		INSERT INTO records (kind, id, org_id, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, id) DO NOTHING RETURNING 1
	), k AS (
		INSERT INTO record_keys (name, value, kind, id, org_id, uniq)
		SELECT n, v, $1, $2, $3, u FROM unnest($7::text[], $8::text[], $9::bool[]) AS k(n, v, u)
		WHERE EXISTS (SELECT 1 FROM r)
		ON CONFLICT DO NOTHING RETURNING 1
	) SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM k)`
	qUpsertRecord = `INSERT INTO records (kind, id, org_id, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, id) DO UPDATE SET org_id = excluded.org_id, data = excluded.data,
		updated_at = excluded.updated_at, ` + sqlcore.KeepCreatedAt
	qDeleteKeys = "DELETE FROM record_keys WHERE kind = $1 AND id = $2"
	qInsertKeys = `INSERT INTO record_keys (name, value, kind, id, org_id, uniq)
		SELECT n, v, $1, $2, $3, u FROM unnest($4::text[], $5::text[], $6::bool[]) AS k(n, v, u)`
	qDeleteRecord = "WITH k AS (DELETE FROM record_keys WHERE kind = $1 AND id = $2) DELETE FROM records WHERE kind = $1 AND id = $2"
	// qInsertActivity skips on any conflict, of id or of fingerprint; qUpdateActivity then
	// tells them apart.
	qInsertActivity = `INSERT INTO activities (id, org_id, fingerprint, status, type, created_at, updated_at, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`
	// qUpsertActivity is the deferred form of both: it fails (23505) only on a fingerprint held
	// by another activity.
	qUpsertActivity = `INSERT INTO activities (id, org_id, fingerprint, status, type, created_at, updated_at, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE SET org_id = excluded.org_id,
		fingerprint = excluded.fingerprint, status = excluded.status, type = excluded.type,
		created_at = excluded.created_at, updated_at = excluded.updated_at, data = excluded.data`
	qUpdateActivity = `UPDATE activities SET org_id = $2, fingerprint = $3, status = $4, type = $5,
		created_at = $6, updated_at = $7, data = $8 WHERE id = $1`
)

// pgConn is the sqlcore.Conn of a querier.
type pgConn struct{ q querier }

func (c pgConn) Query(
	ctx context.Context,
	query string,
	args []any,
	row func(scan func(dest ...any) error) error,
) error {
	rows, err := c.q.Query(ctx, query, args...)
	if err != nil {
		return mark(err)
	}
	defer rows.Close()
	return mark(sqlcore.EachRow(rows.Next, rows.Scan, rows.Err, row))
}

// reader implements store.Reader: on the pool in View, on the session in Update, where the
// Get of tx locks the row it reads (newReader with forUpdate). q is kept for the export
// queries.
type reader struct {
	sqlcore.Reader
	q querier
}

func newReader(q querier, forUpdate bool) *reader {
	r := &reader{q: q, Reader: sqlcore.Reader{
		Conn: pgConn{q}, Driver: "postgres", Ph: sqlcore.Dollar, Queries: readQueries,
		NoLimit:  nil, // LIMIT NULL: no limit
		KeyValue: encodeKeyValue,
	}}
	if forUpdate {
		r.GetSuffix = " FOR UPDATE"
	}
	return r
}

var errTxDone = errors.New("postgres: transaction used after its Update fn returned")

// tx is the store.Tx of one Update attempt.
type tx struct {
	sqlcore.Live         // the reads, on reader, each after check; Get is tx's own
	reader       *reader // plain reads (no FOR UPDATE), which need no BEGIN (session.Query)
	locking      *reader // Get: SELECT ... FOR UPDATE, in the transaction
	s            *session
	depth        int
	parent       *tx
	finished     atomic.Bool
}

var _ store.Tx = (*tx)(nil)

func newTx(s *session, depth int, parent *tx) *tx {
	t := &tx{s: s, depth: depth, parent: parent}
	if parent != nil {
		t.reader, t.locking = parent.reader, parent.locking
	} else {
		t.reader, t.locking = newReader(s, false), newReader(locking{s}, true)
	}
	t.Live = sqlcore.Live{R: t.reader, Check: t.check}
	return t
}

// Get locks the row it reads until the transaction ends.
func (t *tx) Get(ctx context.Context, kind, id string) (_ store.Record, err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return store.Record{}, err
	}
	return t.locking.Get(ctx, kind, id)
}

func (t *tx) check(ctx context.Context) error {
	for p := t; p != nil; p = p.parent {
		if p.finished.Load() {
			return errTxDone
		}
	}
	return ctx.Err()
}

// guarded runs the queued statements of b as one pipeline (one round trip). When guard is
// set they run inside a savepoint, so that a failure (a taken unique key) undoes them alone
// and leaves the transaction usable. results reads each statement's result in order.
func (t *tx) guarded(ctx context.Context, guard bool, b *pgx.Batch, results func(pgx.BatchResults) error) error {
	if guard {
		stmts := b.QueuedQueries
		b = &pgx.Batch{}
		b.Queue("SAVEPOINT lk_write")
		b.QueuedQueries = append(b.QueuedQueries, stmts...)
		b.Queue("RELEASE SAVEPOINT lk_write")
	}
	br := t.s.SendBatch(ctx, b)
	err := func() error {
		if guard {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := results(br); err != nil {
			return err
		}
		if guard {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && guard {
		if rerr := t.s.run(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT lk_write", "RELEASE SAVEPOINT lk_write"); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

func keyArrays(keys []store.Key) (names, values []string, uniq []bool) {
	names = make([]string, len(keys))
	values = make([]string, len(keys))
	uniq = make([]bool, len(keys))
	for i, k := range keys {
		names[i], values[i], uniq[i] = k.Name, encodeKeyValue(k.Value), k.Unique
	}
	return names, values, uniq
}

func (t *tx) Put(ctx context.Context, rec store.Record, keys ...store.Key) error {
	return t.put(ctx, false, rec, keys)
}

func (t *tx) Insert(ctx context.Context, rec store.Record, keys ...store.Key) error {
	return t.put(ctx, true, rec, keys)
}

func (t *tx) put(ctx context.Context, insert bool, rec store.Record, keys []store.Key) (err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return err
	}
	if rec.Kind == "" || rec.ID == "" {
		return fmt.Errorf("postgres: record needs a kind and an id")
	}
	created, updated, err := sqlcore.Times(rec.CreatedAt, rec.UpdatedAt)
	if err != nil {
		return err
	}
	keys, anyUnique := sqlcore.NormalizeKeys(keys)
	names, values, uniq := keyArrays(keys)
	data := sqlcore.Data(rec.Data)
	if insert {
		var inserted, keyed int
		err := t.s.QueryRow(ctx, qInsertRecord, rec.Kind, rec.ID, rec.OrgID, data, created, updated, names, values, uniq).
			Scan(&inserted, &keyed)
		if err != nil {
			return fmt.Errorf("postgres: insert %s/%s: %w", rec.Kind, rec.ID, err)
		}
		if inserted == 0 {
			return fmt.Errorf("%w: record %s/%s", store.ErrAlreadyExists, rec.Kind, rec.ID)
		}
		if keyed < len(keys) {
			if _, err := t.s.Exec(ctx, qDeleteRecord, rec.Kind, rec.ID); err != nil {
				return fmt.Errorf("postgres: insert %s/%s: undo: %w", rec.Kind, rec.ID, err)
			}
			return fmt.Errorf("%w: a unique key of record %s/%s is taken", store.ErrAlreadyExists, rec.Kind, rec.ID)
		}
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(qUpsertRecord, rec.Kind, rec.ID, rec.OrgID, data, created, updated)
	b.Queue(qDeleteKeys, rec.Kind, rec.ID)
	if len(keys) > 0 {
		b.Queue(qInsertKeys, rec.Kind, rec.ID, rec.OrgID, names, values, uniq)
	}
	if !anyUnique {
		// Nothing here can fail but the database itself: the write may wait for the next
		// statement's round trip (see session).
		if err := t.s.write(ctx, b); err != nil {
			return fmt.Errorf("postgres: put %s/%s: %w", rec.Kind, rec.ID, err)
		}
		return nil
	}
	n := b.Len()
	// Only a unique key can fail once the record is written: a savepoint then undoes the
	// record's write alone and keeps the transaction usable.
	err = t.guarded(ctx, anyUnique, b, func(br pgx.BatchResults) error {
		for range n {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
	if _, ok := uniqueViolation(err); ok {
		return fmt.Errorf("%w: a unique key of record %s/%s is taken", store.ErrAlreadyExists, rec.Kind, rec.ID)
	}
	if err != nil {
		return fmt.Errorf("postgres: put %s/%s: %w", rec.Kind, rec.ID, err)
	}
	return nil
}

func (t *tx) Delete(ctx context.Context, kind, id string) (err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return err
	}
	tag, err := t.s.Exec(ctx, qDeleteRecord, kind, id)
	if err != nil {
		return fmt.Errorf("postgres: delete %s/%s: %w", kind, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: record %s/%s", store.ErrNotFound, kind, id)
	}
	return nil
}

func (t *tx) PutActivity(ctx context.Context, a store.Activity) (err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return err
	}
	if a.ID == "" {
		return fmt.Errorf("postgres: activity needs an id")
	}
	created, updated, err := sqlcore.Times(a.CreatedAt, a.UpdatedAt)
	if err != nil {
		return err
	}
	var fp *string
	if a.Fingerprint != "" {
		fp = &a.Fingerprint
	}
	args := []any{a.ID, a.OrgID, fp, a.Status, a.Type, created, updated, sqlcore.Data(a.Data)}
	// Kept in case the COMMIT's answer is lost (failover.go). A failed write leaves it here, and
	// a look-up then finds the activity absent or different: fn runs again, which is safe.
	t.s.acts = append(t.s.acts, store.Activity{ID: a.ID, Fingerprint: a.Fingerprint, Status: a.Status, Data: a.Data})
	if t.s.deferWrites {
		// One upsert, which fails only when another activity holds the fingerprint: that
		// failure re-runs the attempt with writes sent on their own, below (see session).
		b := &pgx.Batch{}
		b.Queue(qUpsertActivity, args...)
		if err := t.s.write(ctx, b); err != nil {
			return fmt.Errorf("postgres: put activity %s: %w", a.ID, err)
		}
		return nil
	}
	// The common case, a new activity, needs one statement and no savepoint.
	tag, err := t.s.Exec(ctx, qInsertActivity, args...)
	if err != nil {
		return fmt.Errorf("postgres: put activity %s: %w", a.ID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	// The id exists (update it), or the fingerprint is held (no row has the id). The update
	// itself may collide on the fingerprint, so it runs in a savepoint.
	b := &pgx.Batch{}
	b.Queue(qUpdateActivity, args...)
	guard := fp != nil && a.Status != store.ActivityStatusFailed
	var updated1 int64
	err = t.guarded(ctx, guard, b, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		updated1 = tag.RowsAffected()
		return err
	})
	if _, ok := uniqueViolation(err); ok || (err == nil && updated1 == 0) {
		return fmt.Errorf("%w: another activity holds the fingerprint of activity %s", store.ErrAlreadyExists, a.ID)
	}
	if err != nil {
		return fmt.Errorf("postgres: put activity %s: %w", a.ID, err)
	}
	return nil
}

func (t *tx) Savepoint(ctx context.Context, fn func(store.Tx) error) (err error) {
	if err := t.check(ctx); err != nil {
		return err
	}
	acts := len(t.s.acts)
	name := "lk_s" + strconv.Itoa(t.depth+1)
	if _, err := t.s.Exec(ctx, "SAVEPOINT "+name); err != nil {
		return fmt.Errorf("postgres: savepoint: %w", err)
	}
	child := newTx(t.s, t.depth+1, t)
	normal := false
	defer func() {
		child.finished.Store(true)
		q := []string{"RELEASE SAVEPOINT " + name}
		if !normal || err != nil {
			q = append([]string{"ROLLBACK TO SAVEPOINT " + name}, q...)
			t.s.acts = t.s.acts[:acts]
		}
		// Writes deferred in the savepoint go first: fn's failure holds only if they succeed.
		if rerr := t.s.run(context.WithoutCancel(ctx), q...); rerr != nil {
			err = errors.Join(err, fmt.Errorf("postgres: end savepoint: %w", rerr))
		}
	}()
	err = fn(child)
	normal = true
	return err
}

// Count inside a transaction first locks (kind, orgID) (see Lock), so transactions that
// count the same kind of the same organization (a limit check before an insert) run one after
// the other until commit; the count is a separate statement after the lock, so under READ
// COMMITTED it sees what the previous holder committed. Without the lock, concurrent
// count-then-insert transactions each see the old count and together overshoot the limit.
func (t *tx) Count(ctx context.Context, kind, orgID string, atMost int) (int, error) {
	if err := t.Lock(ctx, "count\x00"+kind+"\x00"+orgID); err != nil {
		return 0, err
	}
	return t.reader.Count(ctx, kind, orgID, atMost)
}

// Lock takes a transaction-scoped advisory lock whose key is 64 bits of FNV-1a of name (a
// collision only makes two unrelated transactions wait for each other).
// NoLock reads in the transaction without FOR UPDATE (store.Tx.NoLock).
func (t *tx) NoLock() store.Reader { return noLockTx{t} }

// noLockTx is a Tx whose Get does not lock; only its Reader methods are reachable through
// store.Reader.
type noLockTx struct{ *tx }

func (n noLockTx) Get(ctx context.Context, kind, id string) (_ store.Record, err error) {
	defer markErr(&err)
	if err := n.check(ctx); err != nil {
		return store.Record{}, err
	}
	return n.reader.Get(ctx, kind, id)
}

func (t *tx) Lock(ctx context.Context, name string) (err error) {
	defer markErr(&err)
	if err := t.check(ctx); err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	if _, err := t.s.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return fmt.Errorf("postgres: taking lock: %w", err)
	}
	return nil
}
