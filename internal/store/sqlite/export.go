package sqlite

import (
	"context"
	"fmt"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
)

// The store.Exporter of the SQLite store reads on the read-only pool, like View: each
// method sees the data committed when it starts. SQLite compares TEXT as bytes (BINARY), the
// order Exporter promises.
var _ store.Exporter = (*Store)(nil)

var (
	qExportRecords    = sqlcore.ExportRecords(sqlcore.Question, "")
	qExportActivities = sqlcore.ExportActivities("")
)

// RecordKinds returns how many records of each kind the store holds (store.Exporter).
func (s *Store) RecordKinds(ctx context.Context) (map[string]int, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.rdb.QueryContext(ctx, sqlcore.RecordKinds)
	if err != nil {
		return nil, fmt.Errorf("sqlite: record kinds: %w", err)
	}
	defer rows.Close()
	out, err := sqlcore.ScanKindCounts(rows.Next, rows.Scan, rows.Err)
	if err != nil {
		return nil, fmt.Errorf("sqlite: record kinds: %w", err)
	}
	return out, nil
}

// EachRecord calls fn with every record of kind and its keys, in ID order (store.Exporter).
func (s *Store) EachRecord(ctx context.Context, kind string, fn func(store.Record, []store.Key) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	rows, err := s.rdb.QueryContext(ctx, qExportRecords, kind)
	if err != nil {
		return fmt.Errorf("sqlite: export %s: %w", kind, err)
	}
	defer rows.Close()
	var fnErr error
	err = sqlcore.ScanExport(rows.Next, rows.Scan, func(r store.Record, k []store.Key) error {
		fnErr = fn(r, k)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return fmt.Errorf("sqlite: export %s: %w", kind, err)
	}
	return nil
}

// EachActivity calls fn with every activity, in ID order (store.Exporter).
func (s *Store) EachActivity(ctx context.Context, fn func(store.Activity) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	rows, err := s.rdb.QueryContext(ctx, qExportActivities)
	if err != nil {
		return fmt.Errorf("sqlite: export activities: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		a, err := sqlcore.ScanActivity(rows.Scan)
		if err != nil {
			return fmt.Errorf("sqlite: export activities: %w", err)
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: export activities: %w", err)
	}
	return nil
}
