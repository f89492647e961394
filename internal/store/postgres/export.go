package postgres

import (
	"context"
	"fmt"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

// The store.Exporter of the PostgreSQL store: on the pool (*Store, each read seeing what was
// committed when it started) and inside an Update (the Tx, seeing the transaction's own
// writes). ORDER BY ... COLLATE "C" compares bytes whatever the database's collation.
var (
	_ store.Exporter = (*Store)(nil)
	_ store.Exporter = (*tx)(nil)
)

const bytewise = ` COLLATE "C"`

var (
	qExportRecords    = sqlcore.ExportRecords(sqlcore.Dollar, bytewise)
	qExportActivities = sqlcore.ExportActivities(bytewise)
)

// RecordKinds returns how many records of each kind the store holds (store.Exporter).
func (s *Store) RecordKinds(ctx context.Context) (map[string]int, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	return s.reads.recordKinds(ctx)
}

// EachRecord calls fn with every record of kind and its keys, in ID order (store.Exporter).
func (s *Store) EachRecord(ctx context.Context, kind string, fn func(store.Record, []store.Key) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.reads.eachRecord(ctx, kind, fn)
}

// EachActivity calls fn with every activity, in ID order (store.Exporter).
func (s *Store) EachActivity(ctx context.Context, fn func(store.Activity) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.reads.eachActivity(ctx, fn)
}

func (t *tx) RecordKinds(ctx context.Context) (map[string]int, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	return t.reader.recordKinds(ctx)
}

func (t *tx) EachRecord(ctx context.Context, kind string, fn func(store.Record, []store.Key) error) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	return t.reader.eachRecord(ctx, kind, fn)
}

func (t *tx) EachActivity(ctx context.Context, fn func(store.Activity) error) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	return t.reader.eachActivity(ctx, fn)
}

func (r *reader) recordKinds(ctx context.Context) (map[string]int, error) {
	rows, err := r.q.Query(ctx, sqlcore.RecordKinds)
	if err != nil {
		return nil, fmt.Errorf("postgres: record kinds: %w", err)
	}
	defer rows.Close()
	out, err := sqlcore.ScanKindCounts(rows.Next, rows.Scan, rows.Err)
	if err != nil {
		return nil, fmt.Errorf("postgres: record kinds: %w", err)
	}
	return out, nil
}

func (r *reader) eachRecord(ctx context.Context, kind string, fn func(store.Record, []store.Key) error) error {
	rows, err := r.q.Query(ctx, qExportRecords, kind)
	if err != nil {
		return fmt.Errorf("postgres: export %s: %w", kind, err)
	}
	defer rows.Close()
	var fnErr error
	err = sqlcore.ScanExport(rows.Next, rows.Scan, func(rec store.Record, k []store.Key) error {
		fnErr = fn(rec, decodeKeys(k))
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		return fmt.Errorf("postgres: export %s: %w", kind, err)
	}
	return nil
}

func (r *reader) eachActivity(ctx context.Context, fn func(store.Activity) error) error {
	rows, err := r.q.Query(ctx, qExportActivities)
	if err != nil {
		return fmt.Errorf("postgres: export activities: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		a, err := sqlcore.ScanActivity(rows.Scan)
		if err != nil {
			return fmt.Errorf("postgres: export activities: %w", err)
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: export activities: %w", err)
	}
	return nil
}
