package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// cmdMigrateStore copies an embedded (SQLite) deployment into an empty PostgreSQL database:
// every record of every kind with its keys, and every activity, in one PostgreSQL transaction
// that also checks the copy (counts and SHA-256 of every kind on both sides) before it commits.
// Either the whole deployment is in PostgreSQL, verified, or nothing is (docs/operations.md,
// "Moving to PostgreSQL"). The data directory is locked as serve locks it, so a serving
// deployment is refused. Secrets stay sealed: the master key is neither needed nor read.
func cmdMigrateStore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate-store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String(
		"from",
		"",
		"data directory of the embedded (SQLite) deployment to copy (it must not be served meanwhile)",
	)
	to := fs.String("to", "", "PostgreSQL URL (postgres://...) of an empty database to copy it into")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" {
		return usageError{"--from is required: the data directory of the embedded deployment"}
	}
	if *to == "" {
		return usageError{"--to is required: the postgres:// URL of an empty database"}
	}
	if !strings.HasPrefix(*to, "postgres://") && !strings.HasPrefix(*to, "postgresql://") {
		return usageError{"--to must be a postgres:// URL: migrate-store moves an embedded deployment to PostgreSQL"}
	}
	db := filepath.Join(*from, server.DatabaseFile)
	if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
		return fmt.Errorf(
			"no Latchkey deployment in %s (%s not found or empty; is --from right?)",
			*from,
			server.DatabaseFile,
		)
	}
	// The lock serve holds for its life: a serving deployment would change under the copy.
	lock, err := server.LockDataDir(*from)
	if err != nil {
		return fmt.Errorf("cannot migrate while the deployment is served: %w", err)
	}
	if lock != nil {
		defer lock.Close()
	}
	src, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, *to, postgres.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer dst.Close()
	sum, err := migrateStore(ctx, src, dst, newProgress(stderr))
	if err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"migrated": map[string]any{"records": sum.records, "activities": sum.activities,
		"kinds": sum.kinds}, "verified": true})
	fmt.Fprintln(stdout, string(b))
	return nil
}

// migrateHook, when set (tests), runs inside the PostgreSQL transaction after every record or
// activity copied (stage "copied", n copied so far) and once before the verification (stage
// "verify", n the total). An error aborts the migration.
var migrateHook func(ctx context.Context, tx store.Tx, stage string, n int) error

// migrated is what a migration copied.
type migrated struct {
	records, activities int
	kinds               map[string]int
}

// exportStore is a store that enumerates what it holds (the SQLite store).
type exportStore interface {
	store.Store
	store.Exporter
}

// errVerify marks a verification failure.
var errVerify = errors.New("verification failed")

// migrateStore copies src into dst, which must be empty, in one transaction of dst, and
// verifies the copy inside it before it commits. dst must export inside its transactions
// (PostgreSQL does).
func migrateStore(ctx context.Context, src exportStore, dst store.Store, p *progress) (migrated, error) {
	var sum migrated
	kinds, err := src.RecordKinds(ctx)
	if err != nil {
		return sum, err
	}
	var nActs int
	if err := src.View(ctx, func(r store.Reader) (err error) {
		nActs, err = r.CountActivities(ctx, "", store.ActivityFilter{})
		return err
	}); err != nil {
		return sum, err
	}
	total := nActs
	for _, n := range kinds {
		total += n
	}
	order := slices.Sorted(maps.Keys(kinds))
	err = dst.Update(ctx, func(tx store.Tx) error {
		tex, ok := tx.(store.Exporter)
		if !ok {
			return fmt.Errorf("the %s store cannot be verified inside its transaction", dst.Dialect())
		}
		// Two migrations into one database queue here; the second then finds it not empty.
		if err := tx.Lock(ctx, "latchkey migrate-store"); err != nil {
			return err
		}
		if err := refuseNonEmpty(ctx, tx, tex); err != nil {
			return err
		}
		p.begin(total)
		n := 0
		copied := func() error {
			n++
			p.add()
			if migrateHook != nil {
				return migrateHook(ctx, tx, "copied", n)
			}
			return nil
		}
		for _, kind := range order {
			p.section(kind, kinds[kind])
			if err := src.EachRecord(ctx, kind, func(rec store.Record, keys []store.Key) error {
				if err := tx.Insert(ctx, rec, keys...); err != nil {
					return fmt.Errorf("copying %s %s: %w", kind, rec.ID, err)
				}
				return copied()
			}); err != nil {
				return err
			}
			p.end()
		}
		p.section("activities", nActs)
		if err := src.EachActivity(ctx, func(a store.Activity) error {
			if err := tx.PutActivity(ctx, a); err != nil {
				return fmt.Errorf("copying activity %s: %w", a.ID, err)
			}
			return copied()
		}); err != nil {
			return err
		}
		p.end()
		if migrateHook != nil {
			if err := migrateHook(ctx, tx, "verify", n); err != nil {
				return err
			}
		}
		p.note("verifying: counting and hashing every kind on both sides")
		return verify(ctx, src, tex)
	})
	if err != nil {
		if errors.Is(err, errVerify) {
			p.note("VERIFICATION FAILED: nothing was committed; the PostgreSQL database is as it was")
		}
		return sum, fmt.Errorf("migrate-store: %w (no record or activity was written to PostgreSQL)", err)
	}
	// What committed is what was verified; a last count from outside the transaction says so.
	if dex, ok := dst.(store.Exporter); ok {
		after, err := dex.RecordKinds(ctx)
		if err != nil {
			return sum, fmt.Errorf("migrate-store: committed, but counting after the commit failed: %w", err)
		}
		var acts int
		if err := dst.View(ctx, func(r store.Reader) (err error) {
			acts, err = r.CountActivities(ctx, "", store.ActivityFilter{})
			return err
		}); err != nil {
			return sum, fmt.Errorf("migrate-store: committed, but counting after the commit failed: %w", err)
		}
		if !maps.Equal(after, kinds) || acts != nActs {
			return sum, fmt.Errorf(
				"migrate-store: committed, but PostgreSQL now holds %s and %d activities where the source holds %s and %d",
				describeKinds(after),
				acts,
				describeKinds(kinds),
				nActs,
			)
		}
	}
	p.note(
		fmt.Sprintf(
			"done: %d records of %d kinds and %d activities copied and verified (counts and SHA-256 match)",
			total-nActs,
			len(kinds),
			nActs,
		),
	)
	return migrated{records: total - nActs, activities: nActs, kinds: kinds}, nil
}

// refuseNonEmpty refuses a target that holds any record or activity, naming what it holds.
func refuseNonEmpty(ctx context.Context, tx store.Tx, ex store.Exporter) error {
	kinds, err := ex.RecordKinds(ctx)
	if err != nil {
		return err
	}
	acts, err := tx.CountActivities(ctx, "", store.ActivityFilter{})
	if err != nil {
		return err
	}
	if len(kinds) == 0 && acts == 0 {
		return nil
	}
	what := describeKinds(kinds)
	if acts > 0 {
		if what != "" {
			what += ", "
		}
		what += fmt.Sprintf("%d activities", acts)
	}
	return fmt.Errorf(
		"the PostgreSQL database is not empty: it holds %s. migrate-store copies into an empty database only: "+
			"give it a new database (or drop and re-create this one if what it holds is not wanted)",
		what,
	)
}

// describeKinds is "8 records (3 organization, 5 user)", kinds in order.
func describeKinds(kinds map[string]int) string {
	var parts []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
		total += kinds[k]
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%d records (%s)", total, strings.Join(parts, ", "))
}

// tally is the count and SHA-256 of one kind (or of the activities).
type tally struct {
	n   int
	sum [sha256.Size]byte
}

// activitiesSection is the name of the activities in a digest (not a valid record kind).
const activitiesSection = "(activities)"

// digest counts and hashes the given kinds, and the activities, of ex. The hash runs over the
// records in ID order (bytes), each as length-prefixed fields: kind, id, organization, data,
// created and updated times (unix ns), then its keys sorted by (name, value) with their
// uniqueness; activities likewise with every field.
func digest(ctx context.Context, ex store.Exporter, kinds []string) (map[string]tally, error) {
	out := map[string]tally{}
	for _, kind := range kinds {
		h := sha256.New()
		n := 0
		if err := ex.EachRecord(ctx, kind, func(r store.Record, keys []store.Key) error {
			n++
			field(h, r.Kind, r.ID, r.OrgID, string(r.Data), nanos(r.CreatedAt), nanos(r.UpdatedAt), fmt.Sprint(len(keys)))
			keys = slices.Clone(keys)
			sort.Slice(keys, func(i, j int) bool {
				return keys[i].Name < keys[j].Name || (keys[i].Name == keys[j].Name && keys[i].Value < keys[j].Value)
			})
			for _, k := range keys {
				field(h, k.Name, k.Value, fmt.Sprint(k.Unique))
			}
			return nil
		}); err != nil {
			return nil, err
		}
		var t tally
		t.n = n
		h.Sum(t.sum[:0])
		out[kind] = t
	}
	h := sha256.New()
	n := 0
	if err := ex.EachActivity(ctx, func(a store.Activity) error {
		n++
		field(h, a.ID, a.OrgID, a.Fingerprint, a.Status, a.Type, nanos(a.CreatedAt), nanos(a.UpdatedAt), string(a.Data))
		return nil
	}); err != nil {
		return nil, err
	}
	t := tally{n: n}
	h.Sum(t.sum[:0])
	out[activitiesSection] = t
	return out, nil
}

func nanos(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return fmt.Sprint(t.UnixNano())
}

func field(h hash.Hash, fields ...string) {
	var l [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(l[:], uint64(len(f)))
		h.Write(l[:])
		io.WriteString(h, f)
	}
}

// verify compares the counts and digests of every kind (of either side) and of the
// activities, and fails naming every difference.
func verify(ctx context.Context, src, dst store.Exporter) error {
	sk, err := src.RecordKinds(ctx)
	if err != nil {
		return err
	}
	dk, err := dst.RecordKinds(ctx)
	if err != nil {
		return err
	}
	all := map[string]int{}
	maps.Copy(all, sk)
	maps.Copy(all, dk)
	kinds := slices.Sorted(maps.Keys(all))
	a, err := digest(ctx, src, kinds)
	if err != nil {
		return fmt.Errorf("verifying the source: %w", err)
	}
	b, err := digest(ctx, dst, kinds)
	if err != nil {
		return fmt.Errorf("verifying PostgreSQL: %w", err)
	}
	var diffs []string
	for _, k := range append(kinds, activitiesSection) {
		x, y := a[k], b[k]
		name := k
		if k == activitiesSection {
			name = "activities"
		}
		switch {
		case x.n != y.n:
			diffs = append(diffs, fmt.Sprintf("%s: %d in the source, %d in PostgreSQL", name, x.n, y.n))
		case !bytes.Equal(x.sum[:], y.sum[:]):
			diffs = append(
				diffs,
				fmt.Sprintf(
					"%s: %d on both sides but their SHA-256 differ (%x in the source, %x in PostgreSQL)",
					name,
					x.n,
					x.sum[:8],
					y.sum[:8],
				),
			)
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s", errVerify, strings.Join(diffs, "; "))
	}
	return nil
}

// progress reports the copy on stderr: on a terminal one line per kind updated in place,
// otherwise one line per kind once it is copied.
type progress struct {
	w            io.Writer
	tty          bool
	total, done  int
	kind         string
	kindN, kindD int
	last         time.Time
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// begin starts (or, after a retried transaction, restarts) the count.
func (p *progress) begin(total int) { p.total, p.done = total, 0 }

func (p *progress) section(kind string, n int) {
	p.kind, p.kindN, p.kindD = kind, n, 0
	p.draw(true)
}

func (p *progress) add() {
	p.done++
	p.kindD++
	p.draw(false)
}

func (p *progress) end() {
	if p.tty {
		p.draw(true)
		fmt.Fprintln(p.w)
		return
	}
	fmt.Fprintf(p.w, "migrate-store: %s\n", p.line())
}

func (p *progress) note(s string) { fmt.Fprintf(p.w, "migrate-store: %s\n", s) }

func (p *progress) line() string {
	return fmt.Sprintf("%-28s %d/%d   (all: %d/%d)", p.kind, p.kindD, p.kindN, p.done, p.total)
}

// draw repaints the terminal line, at most ten times a second unless forced.
func (p *progress) draw(force bool) {
	if !p.tty || (!force && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\x1b[Kmigrate-store: %s", p.line())
}
