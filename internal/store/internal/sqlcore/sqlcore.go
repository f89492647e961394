// Package sqlcore holds what the SQL drivers of the store share: the store.Reader over a
// driver's connection (Reader) and its transaction-checked form (Live), the SQL of the reads
// (written once, with the dialect's parameter markers), the encoding of times as unix
// nanoseconds, the normalization of secondary keys, and the reading of numbered migration
// files. It talks to a database only through the driver's Conn.
package sqlcore

import (
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// Placeholder returns the marker of the n-th (1-based) query parameter.
type Placeholder func(n int) string

// Question is SQLite's marker.
func Question(int) string { return "?" }

// Dollar is PostgreSQL's marker.
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// RecordColumns and ActivityColumns are the column lists every record and activity query
// selects, in the order the drivers scan them. RecordHeadColumns and ActivityHeadColumns are
// the same rows without their data, whose length they read instead: both databases answer
// length() of a blob from its stored size (SQLite without loading its overflow pages,
// PostgreSQL without de-TOASTing it), so a head costs the same however large the row.
const (
	RecordColumns       = "kind, id, org_id, data, created_at, updated_at"
	ActivityColumns     = "id, org_id, fingerprint, status, type, created_at, updated_at, data"
	RecordHeadColumns   = "kind, id, org_id, length(data), created_at, updated_at"
	ActivityHeadColumns = "id, org_id, status, type, created_at, updated_at, length(data)"
)

type builder struct {
	sb   strings.Builder
	args []any
	ph   Placeholder
}

func (b *builder) arg(v any) string {
	b.args = append(b.args, v)
	return b.ph(len(b.args))
}

// in adds "AND column IN (...)" with one parameter per distinct value (in their first order),
// or fails with store.ErrTooManyValues past store.MaxFilterValues distinct values: a
// filter repeating one value a thousand times binds it once.
func (b *builder) in(column string, values []string) error {
	distinct := Distinct(values)
	if len(distinct) > store.MaxFilterValues {
		return fmt.Errorf("%w: %d distinct values of %s, over %d",
			store.ErrTooManyValues, len(distinct), column, store.MaxFilterValues)
	}
	b.sb.WriteString(" AND ")
	b.sb.WriteString(column)
	b.sb.WriteString(" IN (")
	for i, v := range distinct {
		if i > 0 {
			b.sb.WriteString(", ")
		}
		b.sb.WriteString(b.arg(v))
	}
	b.sb.WriteString(")")
	return nil
}

// Distinct returns values without repetitions, in the order of their first occurrence (values
// itself when it has none). It stops counting past store.MaxFilterValues+1 distinct values,
// which is all the caller needs to refuse them.
func Distinct(values []string) []string {
	if len(values) < 2 {
		return values
	}
	seen := make(map[string]struct{}, min(len(values), store.MaxFilterValues+1))
	out := make([]string, 0, min(len(values), store.MaxFilterValues+1))
	for _, v := range values {
		if _, dup := seen[v]; dup {
			continue
		}
		if len(out) > store.MaxFilterValues {
			break
		}
		seen[v] = struct{}{}
		out = append(out, v)
	}
	return out
}

// ListRecords builds the query for store.Reader.List, selecting cols (RecordColumns, or
// RecordHeadColumns for the sizes of a page bounded by bytes). When reversed is true the rows
// come back in the opposite of the wanted order (the query reads backwards from a Before cursor
// so that Limit or MaxBytes keeps the rows nearest to it) and the caller must reverse them.
//
// A cursor id that names no record of that kind yields no rows. o.Key.Value and o.OwnerOf.Value
// are compared as given: the caller encodes them as the driver stores key values (Reader.List
// does).
func ListRecords(
	ph Placeholder,
	cols, kind, orgID string,
	o store.ListOptions,
) (query string, args []any, reversed bool) {
	b := &builder{ph: ph}
	b.sb.WriteString("SELECT " + cols + " FROM records WHERE kind = ")
	b.sb.WriteString(b.arg(kind))
	b.sb.WriteString(" AND org_id = ")
	b.sb.WriteString(b.arg(orgID))
	if o.Key.Name != "" {
		fmt.Fprintf(&b.sb, " AND id IN (SELECT id FROM record_keys WHERE name = %s AND value = %s AND kind = %s)",
			b.arg(o.Key.Name), b.arg(o.Key.Value), b.arg(kind))
	}
	if o.OwnerOf.Name != "" {
		fmt.Fprintf(&b.sb, " AND id IN (SELECT org_id FROM record_keys WHERE name = %s AND value = %s)",
			b.arg(o.OwnerOf.Name), b.arg(o.OwnerOf.Value))
	}
	// In ascending order "after" means greater; in descending order, smaller.
	afterOp, beforeOp := ">", "<"
	if o.Desc {
		afterOp, beforeOp = "<", ">"
	}
	cursor := func(op, id string) {
		fmt.Fprintf(&b.sb, " AND (created_at, id) %s (SELECT created_at, id FROM records WHERE kind = %s AND id = %s)",
			op, b.arg(kind), b.arg(id))
	}
	if o.After != "" {
		cursor(afterOp, o.After)
	}
	if o.Before != "" {
		cursor(beforeOp, o.Before)
	}
	desc := o.Desc
	if o.Before != "" && o.After == "" && (o.Limit > 0 || o.MaxBytes > 0) {
		reversed = true
		desc = !desc
	}
	if desc {
		b.sb.WriteString(" ORDER BY created_at DESC, id DESC")
	} else {
		b.sb.WriteString(" ORDER BY created_at ASC, id ASC")
	}
	if o.Limit > 0 {
		b.sb.WriteString(" LIMIT ")
		b.sb.WriteString(b.arg(int64(o.Limit)))
	}
	return b.sb.String(), b.args, reversed
}

func activityWhere(b *builder, orgID string, f store.ActivityFilter) error {
	b.sb.WriteString(" WHERE 1 = 1")
	if orgID != "" {
		b.sb.WriteString(" AND org_id = ")
		b.sb.WriteString(b.arg(orgID))
	}
	if len(f.Statuses) > 0 {
		if err := b.in("status", f.Statuses); err != nil {
			return err
		}
	}
	if len(f.Types) > 0 {
		if err := b.in("type", f.Types); err != nil {
			return err
		}
	}
	if !f.Since.IsZero() {
		n, err := Nanos(f.Since)
		if err != nil {
			return err
		}
		b.sb.WriteString(" AND created_at >= ")
		b.sb.WriteString(b.arg(n))
	}
	return nil
}

// ListActivities builds the query for store.Reader.ListActivities (newest first), selecting
// cols (ActivityColumns or ActivityHeadColumns); reversed as in ListRecords.
func ListActivities(
	ph Placeholder,
	cols, orgID string,
	f store.ActivityFilter,
) (query string, args []any, reversed bool, err error) {
	b := &builder{ph: ph}
	b.sb.WriteString("SELECT " + cols + " FROM activities")
	if err := activityWhere(b, orgID, f); err != nil {
		return "", nil, false, err
	}
	cursor := func(op, id string) {
		fmt.Fprintf(
			&b.sb,
			" AND (created_at, id) %s (SELECT created_at, id FROM activities WHERE id = %s)",
			op,
			b.arg(id),
		)
	}
	// Newest first: "after" is older.
	if f.After != "" {
		cursor("<", f.After)
	}
	if f.Before != "" {
		cursor(">", f.Before)
	}
	if f.Before != "" && f.After == "" && (f.Limit > 0 || f.MaxBytes > 0) {
		reversed = true
		b.sb.WriteString(" ORDER BY created_at ASC, id ASC")
	} else {
		b.sb.WriteString(" ORDER BY created_at DESC, id DESC")
	}
	if f.Limit > 0 {
		b.sb.WriteString(" LIMIT ")
		b.sb.WriteString(b.arg(int64(f.Limit)))
	}
	return b.sb.String(), b.args, reversed, nil
}

// CountActivities builds the query for store.Reader.CountActivities; orgID "" counts every
// organization. Paging fields of the filter are ignored.
func CountActivities(ph Placeholder, orgID string, f store.ActivityFilter) (query string, args []any, err error) {
	b := &builder{ph: ph}
	b.sb.WriteString("SELECT count(*) FROM activities")
	if err := activityWhere(b, orgID, f); err != nil {
		return "", nil, err
	}
	return b.sb.String(), b.args, nil
}

// MaxIDsPerRead is the most ids one query of RecordsByID or ActivitiesByID names: a page's
// rows are read in batches of at most this many (the largest page of the API is 100).
const MaxIDsPerRead = 128

// IDSlots is the number of id parameters a query of RecordsByID or ActivitiesByID has for n
// ids: the next power of two (the callers repeat the last id to fill it), so that reads of any
// page size share eight statement shapes, which the drivers' statement caches keep.
func IDSlots(n int) int {
	slots := 1
	for slots < n {
		slots *= 2
	}
	return slots
}

// RecordsByID is the query reading the records of a kind (ph(1)) among slots ids (ph(2)...),
// in no particular order.
func RecordsByID(ph Placeholder, slots int) string {
	return "SELECT " + RecordColumns + " FROM records WHERE kind = " + ph(1) + " AND id IN (" + ids(ph, 2, slots) + ")"
}

// ActivitiesByID is the query reading the activities among slots ids (ph(1)...), in no
// particular order.
func ActivitiesByID(ph Placeholder, slots int) string {
	return "SELECT " + ActivityColumns + " FROM activities WHERE id IN (" + ids(ph, 1, slots) + ")"
}

func ids(ph Placeholder, first, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(ph(first + i))
	}
	return sb.String()
}

// Fit is how many of sizes (in the order a page reads them) a page bounded by maxBytes holds:
// those whose running sum stays within maxBytes, and always the first (store.ListOptions.MaxBytes).
// maxBytes <= 0 holds them all.
func Fit(sizes []int, maxBytes int) int {
	if maxBytes <= 0 {
		return len(sizes)
	}
	total := 0
	for i, n := range sizes {
		total += n
		if i > 0 && total > maxBytes {
			return i
		}
	}
	return len(sizes)
}

// Reverse reverses s in place.
func Reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// zeroNanos stands for the zero time.Time, which has no unix-nanosecond value. It is
// math.MinInt64, an instant (in 1677) outside the range Nanos accepts, so it is unambiguous
// and still sorts before every real time.
const zeroNanos = math.MinInt64

var (
	minTime = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// KeepCreatedAt is the SQL an upsert of records uses for created_at: a Put whose CreatedAt
// is the zero time keeps the stored one (the creation time of a record is set once).
const KeepCreatedAt = "created_at = CASE WHEN excluded.created_at = -9223372036854775808 THEN records.created_at ELSE excluded.created_at END"

// Nanos encodes t as unix nanoseconds. The zero time is kept as the zero time; other times
// must lie in [1678, 2262), the range of int64 nanoseconds.
func Nanos(t time.Time) (int64, error) {
	if t.IsZero() {
		return zeroNanos, nil
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return 0, fmt.Errorf("store: time %s out of range [1678, 2262)", t.UTC().Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

// Time decodes Nanos: a UTC time, or the zero time.
func Time(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// NormalizeKeys drops repeated (Name, Value) pairs, a pair being unique when any of its
// repetitions is. It returns whether any key is unique.
func NormalizeKeys(keys []store.Key) (out []store.Key, anyUnique bool) {
	type nv struct{ name, value string }
	for i, k := range keys {
		anyUnique = anyUnique || k.Unique
		dup := false
		for _, p := range keys[:i] {
			if p.Name == k.Name && p.Value == k.Value {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, k)
		}
	}
	if len(out) == len(keys) {
		return keys, anyUnique
	}
	// A repeated pair is unique if any repetition is.
	seen := make(map[nv]int, len(out))
	for i, k := range out {
		seen[nv{k.Name, k.Value}] = i
	}
	for _, k := range keys {
		if k.Unique {
			out[seen[nv{k.Name, k.Value}]].Unique = true
		}
	}
	return out, anyUnique
}

// Data returns d, or an empty non-nil slice for nil (the data columns are NOT NULL).
func Data(d []byte) []byte {
	if d == nil {
		return []byte{}
	}
	return d
}

// Migration is one numbered SQL file.
type Migration struct {
	Version int64
	Name    string // file name
	SQL     string
}

// Migrations reads the files NNNN_name.sql at the root of fsys, ordered by version. Versions
// must be positive and distinct.
func Migrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var ms []Migration
	seen := map[int64]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %q: name must be NNNN_description.sql", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("store: migrations %q and %q share version %d", prev, name, v)
		}
		seen[v] = name
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("store: read migration %q: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// ExportRecords is the query of Exporter.EachRecord: the records of one kind (its only
// parameter, ph(1)) joined with their keys, one row per key (one for a record without keys),
// ordered by record ID, then key name and value. collate is what follows each ORDER BY term to
// compare bytes (PostgreSQL: ` COLLATE "C"`; SQLite compares bytes already: ""). The last
// column is 0 when the row carries no key, 1 for a key, 2 for a unique key; ScanExport reads
// the rows.
func ExportRecords(ph Placeholder, collate string) string {
	return "SELECT r.kind, r.id, r.org_id, r.data, r.created_at, r.updated_at, " +
		"COALESCE(k.name, ''), COALESCE(k.value, ''), CASE WHEN k.id IS NULL THEN 0 WHEN k.uniq THEN 2 ELSE 1 END " +
		"FROM records r LEFT JOIN record_keys k ON k.kind = r.kind AND k.id = r.id " +
		"WHERE r.kind = " + ph(1) + " ORDER BY r.id" + collate + ", k.name" + collate + ", k.value" + collate
}

// ExportActivities is the query of Exporter.EachActivity (collate as in ExportRecords).
func ExportActivities(collate string) string {
	return "SELECT " + ActivityColumns + " FROM activities ORDER BY id" + collate
}

// RecordKinds is the query of Exporter.RecordKinds: (kind, count) rows.
const RecordKinds = "SELECT kind, count(*) FROM records GROUP BY kind"

// ScanKindCounts reads the rows of RecordKinds (kind, count) into a map. next, scan and rowsErr
// are the driver's row cursor (rows.Next, rows.Scan, rows.Err).
func ScanKindCounts(next func() bool, scan func(dest ...any) error, rowsErr func() error) (map[string]int, error) {
	out := map[string]int{}
	for next() {
		var kind string
		var n int
		if err := scan(&kind, &n); err != nil {
			return nil, err
		}
		out[kind] = n
	}
	if err := rowsErr(); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanExport groups the rows of ExportRecords into records with their keys and calls fn with
// each. next and scan are the driver's row cursor (rows.Next, rows.Scan).
func ScanExport(next func() bool, scan func(dest ...any) error, fn func(store.Record, []store.Key) error) error {
	var (
		cur     store.Record
		keys    []store.Key
		pending bool
	)
	for next() {
		var r store.Record
		var c, u, flag int64
		var name, value string
		if err := scan(&r.Kind, &r.ID, &r.OrgID, &r.Data, &c, &u, &name, &value, &flag); err != nil {
			return err
		}
		if !pending || r.ID != cur.ID {
			if pending {
				if err := fn(cur, keys); err != nil {
					return err
				}
			}
			r.CreatedAt, r.UpdatedAt = Time(c), Time(u)
			cur, keys, pending = r, nil, true
		}
		if flag != 0 {
			keys = append(keys, store.Key{Name: name, Value: value, Unique: flag == 2})
		}
	}
	if pending {
		return fn(cur, keys)
	}
	return nil
}
