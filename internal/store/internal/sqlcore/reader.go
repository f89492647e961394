package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Conn is what Reader needs of a driver's connection: Query runs query and calls row with the
// scan function of each result row in turn, stopping at the first error row returns.
type Conn interface {
	Query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error
}

// ReadQueries are the fixed queries of Reader in one dialect.
type ReadQueries struct {
	GetRecord       string
	CountRecords    string // kind, org, limit
	Lookup          string
	GetActivity     string
	GetActivityByFP string
}

// Queries returns the fixed queries of Reader with the dialect's parameter markers.
func Queries(ph Placeholder) ReadQueries {
	return ReadQueries{
		GetRecord: "SELECT " + RecordColumns + " FROM records WHERE kind = " + ph(1) + " AND id = " + ph(2),
		CountRecords: "SELECT count(*) FROM (SELECT 1 FROM records WHERE kind = " + ph(
			1,
		) + " AND org_id = " + ph(
			2,
		) + " LIMIT " + ph(
			3,
		) + ") AS capped",
		Lookup:      "SELECT kind, id, org_id FROM record_keys WHERE name = " + ph(1) + " AND value = " + ph(2),
		GetActivity: "SELECT " + ActivityColumns + " FROM activities WHERE id = " + ph(1),
		GetActivityByFP: "SELECT " + ActivityColumns + " FROM activities WHERE fingerprint = " + ph(
			1,
		) + " AND status <> '" + store.ActivityStatusFailed + "'",
	}
}

// Reader implements store.Reader over a driver's Conn.
type Reader struct {
	Conn    Conn
	Driver  string // names the driver in errors: "sqlite", "postgres"
	Ph      Placeholder
	Queries ReadQueries // Queries(Ph)
	// GetSuffix is appended to the query of Get (" FOR UPDATE" inside a PostgreSQL
	// transaction).
	GetSuffix string
	// NoLimit is the LIMIT argument that means no limit (NULL on PostgreSQL, -1 on SQLite).
	NoLimit any
	// KeyValue, when set, is how the driver stores a key value (PostgreSQL encodes values its
	// text type cannot hold); Lookup looks for that form.
	KeyValue func(string) string
}

var _ store.Reader = (*Reader)(nil)

// ScanRecord reads a row of RecordColumns.
func ScanRecord(scan func(dest ...any) error) (store.Record, error) {
	var r store.Record
	var c, u int64
	if err := scan(&r.Kind, &r.ID, &r.OrgID, &r.Data, &c, &u); err != nil {
		return store.Record{}, err
	}
	r.CreatedAt, r.UpdatedAt = Time(c), Time(u)
	return r, nil
}

// ScanActivity reads a row of ActivityColumns.
func ScanActivity(scan func(dest ...any) error) (store.Activity, error) {
	var a store.Activity
	var fp *string
	var c, u int64
	if err := scan(&a.ID, &a.OrgID, &fp, &a.Status, &a.Type, &c, &u, &a.Data); err != nil {
		return store.Activity{}, err
	}
	if fp != nil {
		a.Fingerprint = *fp
	}
	a.CreatedAt, a.UpdatedAt = Time(c), Time(u)
	return a, nil
}

// ScanActivityHead reads a row of ActivityHeadColumns.
func ScanActivityHead(scan func(dest ...any) error) (store.ActivityHead, error) {
	var h store.ActivityHead
	var c, u, size int64
	if err := scan(&h.ID, &h.OrgID, &h.Status, &h.Type, &c, &u, &size); err != nil {
		return store.ActivityHead{}, err
	}
	h.CreatedAt, h.UpdatedAt, h.Size = Time(c), Time(u), int(size)
	return h, nil
}

// recordHead is a row of RecordHeadColumns: a record without its Data, and the Data's size.
type recordHead struct {
	rec  store.Record
	size int
}

func scanRecordHead(scan func(dest ...any) error) (recordHead, error) {
	var h recordHead
	var c, u, size int64
	if err := scan(&h.rec.Kind, &h.rec.ID, &h.rec.OrgID, &size, &c, &u); err != nil {
		return recordHead{}, err
	}
	h.rec.CreatedAt, h.rec.UpdatedAt, h.size = Time(c), Time(u), int(size)
	return h, nil
}

// all runs query and reads every row with scan.
func all[T any](
	ctx context.Context,
	c Conn,
	query string,
	args []any,
	scan func(func(...any) error) (T, error),
) ([]T, error) {
	var out []T
	err := c.Query(ctx, query, args, func(s func(...any) error) error {
		v, err := scan(s)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// one runs query and reads its first row with scan; found is false when there is none.
func one[T any](
	ctx context.Context,
	c Conn,
	query string,
	args []any,
	scan func(func(...any) error) (T, error),
) (v T, found bool, err error) {
	err = c.Query(ctx, query, args, func(s func(...any) error) error {
		if found {
			return nil
		}
		v, err = scan(s)
		found = err == nil
		return err
	})
	return v, found, err
}

func (r *Reader) Get(ctx context.Context, kind, id string) (store.Record, error) {
	rec, found, err := one(ctx, r.Conn, r.Queries.GetRecord+r.GetSuffix, []any{kind, id}, ScanRecord)
	if err != nil {
		return store.Record{}, fmt.Errorf("%s: get record %s/%s: %w", r.Driver, kind, id, err)
	}
	if !found {
		return store.Record{}, fmt.Errorf("%w: record %s/%s", store.ErrNotFound, kind, id)
	}
	return rec, nil
}

func (r *Reader) List(ctx context.Context, kind, orgID string, opts store.ListOptions) ([]store.Record, error) {
	if r.KeyValue != nil {
		opts.Key.Value, opts.OwnerOf.Value = r.KeyValue(opts.Key.Value), r.KeyValue(opts.OwnerOf.Value)
	}
	var out []store.Record
	var reversed bool
	var err error
	if opts.MaxBytes > 0 {
		out, reversed, err = r.listBounded(ctx, kind, orgID, opts)
	} else {
		var query string
		var args []any
		query, args, reversed = ListRecords(r.Ph, RecordColumns, kind, orgID, opts)
		out, err = all(ctx, r.Conn, query, args, ScanRecord)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: list %s: %w", r.Driver, kind, err)
	}
	if reversed {
		Reverse(out)
	}
	return out, nil
}

// listBounded is List of a page bounded by bytes, in the order the query reads it: the heads
// of the page first, then the Data of those that fit.
func (r *Reader) listBounded(
	ctx context.Context,
	kind, orgID string,
	opts store.ListOptions,
) (out []store.Record, reversed bool, err error) {
	query, args, reversed := ListRecords(r.Ph, RecordHeadColumns, kind, orgID, opts)
	heads, err := within(
		ctx,
		r.Conn,
		query,
		args,
		scanRecordHead,
		func(h recordHead) int { return h.size },
		opts.MaxBytes,
	)
	if err != nil {
		return nil, false, err
	}
	ids := make([]string, len(heads))
	for i, h := range heads {
		ids[i] = h.rec.ID
	}
	byID, err := readByID(ctx, r.Conn, ids, []any{kind}, func(slots int) string { return RecordsByID(r.Ph, slots) },
		ScanRecord, func(rec store.Record) string { return rec.ID })
	if err != nil {
		return nil, false, err
	}
	for _, h := range heads {
		if rec, ok := byID[h.rec.ID]; ok && rec.OrgID == orgID { // not deleted or moved meanwhile
			out = append(out, rec)
		}
	}
	return out[:Fit(sizesOf(out, func(rec store.Record) int { return len(rec.Data) }), opts.MaxBytes)], reversed, nil
}

// errPageFull stops the reading of a page's heads at the first that does not fit.
var errPageFull = errors.New("page full")

// within runs query and reads its rows with scan while their sizes fit maxBytes (Fit: at least
// the first; maxBytes <= 0: every row). It stops at the first row that does not fit, so the
// heads of a page bounded by bytes are read no further than the page (and one row).
func within[T any](
	ctx context.Context,
	c Conn,
	query string,
	args []any,
	scan func(func(...any) error) (T, error),
	size func(T) int,
	maxBytes int,
) ([]T, error) {
	var out []T
	total := 0
	err := c.Query(ctx, query, args, func(s func(...any) error) error {
		v, err := scan(s)
		if err != nil {
			return err
		}
		total += size(v)
		if maxBytes > 0 && len(out) > 0 && total > maxBytes {
			return errPageFull
		}
		out = append(out, v)
		return nil
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	return out, err
}

func sizesOf[T any](rows []T, size func(T) int) []int {
	out := make([]int, len(rows))
	for i, row := range rows {
		out[i] = size(row)
	}
	return out
}

// readByID reads the rows of ids (distinct) in batches of at most MaxIDsPerRead, each a query
// query(slots) whose parameters are prefix then the batch's ids, the last repeated to fill
// the slots (IDSlots). It returns the rows found by id.
func readByID[T any](
	ctx context.Context,
	c Conn,
	ids []string,
	prefix []any,
	query func(slots int) string,
	scan func(func(...any) error) (T, error),
	idOf func(T) string,
) (map[string]T, error) {
	out := make(map[string]T, len(ids))
	for len(ids) > 0 {
		batch := ids[:min(len(ids), MaxIDsPerRead)]
		ids = ids[len(batch):]
		slots := IDSlots(len(batch))
		args := make([]any, 0, len(prefix)+slots)
		args = append(args, prefix...)
		for i := range slots {
			args = append(args, batch[min(i, len(batch)-1)])
		}
		err := c.Query(ctx, query(slots), args, func(s func(...any) error) error {
			v, err := scan(s)
			if err != nil {
				return err
			}
			out[idOf(v)] = v
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CountRows runs a query whose one row is a count.
func (r *Reader) CountRows(ctx context.Context, query string, args ...any) (int, error) {
	n, _, err := one(ctx, r.Conn, query, args, func(scan func(...any) error) (n int, err error) {
		err = scan(&n)
		return n, err
	})
	return n, err
}

func (r *Reader) Count(ctx context.Context, kind, orgID string, atMost int) (int, error) {
	limit := r.NoLimit
	if atMost > 0 {
		limit = atMost
	}
	n, err := r.CountRows(ctx, r.Queries.CountRecords, kind, orgID, limit)
	if err != nil {
		return 0, fmt.Errorf("%s: count %s: %w", r.Driver, kind, err)
	}
	return n, nil
}

func (r *Reader) Lookup(ctx context.Context, name, value string) ([]store.Ref, error) {
	if r.KeyValue != nil {
		value = r.KeyValue(value)
	}
	out, err := all(
		ctx,
		r.Conn,
		r.Queries.Lookup,
		[]any{name, value},
		func(scan func(...any) error) (ref store.Ref, err error) {
			err = scan(&ref.Kind, &ref.ID, &ref.OrgID)
			return ref, err
		},
	)
	if err != nil {
		return nil, fmt.Errorf("%s: lookup %s: %w", r.Driver, name, err)
	}
	return out, nil
}

func (r *Reader) getActivity(ctx context.Context, what, query, arg string) (store.Activity, error) {
	a, found, err := one(ctx, r.Conn, query, []any{arg}, ScanActivity)
	if err != nil {
		return store.Activity{}, fmt.Errorf("%s: get activity %s: %w", r.Driver, what, err)
	}
	if !found {
		return store.Activity{}, fmt.Errorf("%w: activity %s", store.ErrNotFound, what)
	}
	return a, nil
}

func (r *Reader) GetActivity(ctx context.Context, id string) (store.Activity, error) {
	return r.getActivity(ctx, id, r.Queries.GetActivity, id)
}

func (r *Reader) GetActivityByFingerprint(ctx context.Context, fingerprint string) (store.Activity, error) {
	if fingerprint == "" {
		return store.Activity{}, fmt.Errorf("%w: activity with empty fingerprint", store.ErrNotFound)
	}
	return r.getActivity(ctx, "by fingerprint", r.Queries.GetActivityByFP, fingerprint)
}

func (r *Reader) ListActivities(ctx context.Context, orgID string, f store.ActivityFilter) ([]store.Activity, error) {
	if f.MaxBytes > 0 {
		return r.listActivitiesBounded(ctx, orgID, f)
	}
	query, args, reversed, err := ListActivities(r.Ph, ActivityColumns, orgID, f)
	if err != nil {
		return nil, err
	}
	out, err := all(ctx, r.Conn, query, args, ScanActivity)
	if err != nil {
		return nil, fmt.Errorf("%s: list activities: %w", r.Driver, err)
	}
	if reversed {
		Reverse(out)
	}
	return out, nil
}

// listActivitiesBounded is ListActivities of a page bounded by bytes: the heads of the page
// first, then the rows of those that fit (read again whole: an activity's status and Data
// change together).
func (r *Reader) listActivitiesBounded(
	ctx context.Context,
	orgID string,
	f store.ActivityFilter,
) ([]store.Activity, error) {
	heads, reversed, err := r.activityHeads(ctx, orgID, f, f.MaxBytes)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(heads))
	for i, h := range heads {
		ids[i] = h.ID
	}
	byID, err := readByID(ctx, r.Conn, ids, nil, func(slots int) string { return ActivitiesByID(r.Ph, slots) },
		ScanActivity, func(a store.Activity) string { return a.ID })
	if err != nil {
		return nil, fmt.Errorf("%s: list activities: %w", r.Driver, err)
	}
	out := make([]store.Activity, 0, len(heads))
	for _, h := range heads {
		if a, ok := byID[h.ID]; ok { // not deleted meanwhile
			out = append(out, a)
		}
	}
	out = out[:Fit(sizesOf(out, func(a store.Activity) int { return len(a.Data) }), f.MaxBytes)]
	if reversed {
		Reverse(out)
	}
	return out, nil
}

func (r *Reader) ListActivityHeads(
	ctx context.Context,
	orgID string,
	f store.ActivityFilter,
) ([]store.ActivityHead, error) {
	out, reversed, err := r.activityHeads(ctx, orgID, f, 0)
	if err != nil {
		return nil, err
	}
	if reversed {
		Reverse(out)
	}
	return out, nil
}

// activityHeads reads the heads of a page of activities in the order the query reads them,
// as far as their sizes fit maxBytes (0: all of them).
func (r *Reader) activityHeads(
	ctx context.Context,
	orgID string,
	f store.ActivityFilter,
	maxBytes int,
) ([]store.ActivityHead, bool, error) {
	query, args, reversed, err := ListActivities(r.Ph, ActivityHeadColumns, orgID, f)
	if err != nil {
		return nil, false, err
	}
	out, err := within(
		ctx,
		r.Conn,
		query,
		args,
		ScanActivityHead,
		func(h store.ActivityHead) int { return h.Size },
		maxBytes,
	)
	if err != nil {
		return nil, false, fmt.Errorf("%s: list activities: %w", r.Driver, err)
	}
	return out, reversed, nil
}

func (r *Reader) CountActivities(ctx context.Context, orgID string, f store.ActivityFilter) (int, error) {
	query, args, err := CountActivities(r.Ph, orgID, f)
	if err != nil {
		return 0, err
	}
	n, err := r.CountRows(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: count activities: %w", r.Driver, err)
	}
	return n, nil
}

// Live is the store.Reader of a transaction: each read first calls Check (the transaction is
// still live and the context not done), then reads through R.
type Live struct {
	R     store.Reader
	Check func(context.Context) error
}

func (l Live) Get(ctx context.Context, kind, id string) (store.Record, error) {
	if err := l.Check(ctx); err != nil {
		return store.Record{}, err
	}
	return l.R.Get(ctx, kind, id)
}

func (l Live) List(ctx context.Context, kind, orgID string, opts store.ListOptions) ([]store.Record, error) {
	if err := l.Check(ctx); err != nil {
		return nil, err
	}
	return l.R.List(ctx, kind, orgID, opts)
}

func (l Live) Count(ctx context.Context, kind, orgID string, atMost int) (int, error) {
	if err := l.Check(ctx); err != nil {
		return 0, err
	}
	return l.R.Count(ctx, kind, orgID, atMost)
}

func (l Live) Lookup(ctx context.Context, name, value string) ([]store.Ref, error) {
	if err := l.Check(ctx); err != nil {
		return nil, err
	}
	return l.R.Lookup(ctx, name, value)
}

func (l Live) GetActivity(ctx context.Context, id string) (store.Activity, error) {
	if err := l.Check(ctx); err != nil {
		return store.Activity{}, err
	}
	return l.R.GetActivity(ctx, id)
}

func (l Live) GetActivityByFingerprint(ctx context.Context, fingerprint string) (store.Activity, error) {
	if err := l.Check(ctx); err != nil {
		return store.Activity{}, err
	}
	return l.R.GetActivityByFingerprint(ctx, fingerprint)
}

func (l Live) ListActivities(ctx context.Context, orgID string, f store.ActivityFilter) ([]store.Activity, error) {
	if err := l.Check(ctx); err != nil {
		return nil, err
	}
	return l.R.ListActivities(ctx, orgID, f)
}

func (l Live) ListActivityHeads(
	ctx context.Context,
	orgID string,
	f store.ActivityFilter,
) ([]store.ActivityHead, error) {
	if err := l.Check(ctx); err != nil {
		return nil, err
	}
	return l.R.ListActivityHeads(ctx, orgID, f)
}

func (l Live) CountActivities(ctx context.Context, orgID string, f store.ActivityFilter) (int, error) {
	if err := l.Check(ctx); err != nil {
		return 0, err
	}
	return l.R.CountActivities(ctx, orgID, f)
}

// EachRow calls row with scan for each row of a driver's cursor (next, scan and rowsErr are
// its Next, Scan and Err), stopping at the first error.
func EachRow(
	next func() bool,
	scan func(dest ...any) error,
	rowsErr func() error,
	row func(scan func(dest ...any) error) error,
) error {
	for next() {
		if err := row(scan); err != nil {
			return err
		}
	}
	return rowsErr()
}

// Times encodes the creation and update times of a record or activity (Nanos).
func Times(created, updated time.Time) (c, u int64, err error) {
	if c, err = Nanos(created); err != nil {
		return 0, 0, err
	}
	if u, err = Nanos(updated); err != nil {
		return 0, 0, err
	}
	return c, u, nil
}
