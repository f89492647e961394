package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

func openTemp(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "latchkey.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, Options{}) })
}

func TestConformanceBatchOfOne(t *testing.T) {
	// The same behaviour without group commit: one Update per transaction.
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, Options{MaxBatch: 1}) })
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	ms, err := sqlcore.Migrations(mustSub(migrationFiles))
	if err != nil || len(ms) == 0 {
		t.Fatalf("Migrations: %d, %v", len(ms), err)
	}
	versions := func() []int64 {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, "SELECT version, applied_at FROM schema_migrations ORDER BY version")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var vs []int64
		for rows.Next() {
			var v, at int64
			if err := rows.Scan(&v, &at); err != nil {
				t.Fatal(err)
			}
			if at <= 0 {
				t.Fatalf("version %d has applied_at %d", v, at)
			}
			vs = append(vs, v)
		}
		return vs
	}
	var want []int64
	for _, m := range ms {
		want = append(want, m.Version)
	}
	for i := 0; i < 3; i++ { // fresh, then re-opened twice: idempotent
		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := versions(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("open %d: schema_migrations = %v, want %v", i, got, want)
		}
	}
	// The schema is the one the queries expect.
	db, _ := sql.Open("sqlite", path)
	defer db.Close()
	for _, table := range []string{"records", "record_keys", "activities"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&n); err != nil ||
			n != 1 {
			t.Fatalf("table %s: %d, %v", table, n, err)
		}
	}
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
}

func TestOpenRejectsURIs(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := Open(context.Background(), p, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// TestGroupCommit holds the writer inside one Update while others queue, then checks they all
// committed in that one transaction and that failures stayed their own.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Options{})
	entered := make(chan struct{})
	release := make(chan struct{})
	blocker := make(chan error, 1)
	var once sync.Once // fn may run again when the batch restarts after a failed job
	go func() {
		blocker <- s.Update(ctx, func(tx store.Tx) error {
			once.Do(func() { close(entered) })
			<-release
			return tx.Put(ctx, store.Record{Kind: "r", ID: "blocker", OrgID: "o"})
		})
	}()
	<-entered
	commitsBefore := s.w.commits.Load()

	const n = 20
	errBoom := errors.New("boom")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Update(ctx, func(tx store.Tx) error {
				if err := tx.Insert(ctx, store.Record{Kind: "r", ID: "j" + strconv.Itoa(i), OrgID: "o"},
					store.Key{Name: "u", Value: strconv.Itoa(i % 10), Unique: true}); err != nil {
					return err // the second half collides with the first on the unique key
				}
				if i%3 == 0 {
					return errBoom
				}
				return nil
			})
		}()
	}
	for len(s.w.jobs) < n {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if err := <-blocker; err != nil {
		t.Fatal(err)
	}
	if got := s.w.commits.Load() - commitsBefore; got != 1 {
		t.Fatalf("%d commits, want 1 batch", got)
	}
	// Jobs run in queue order, so which of i and i+10 wins the key depends on arrival;
	// check each outcome against the stored state instead.
	owners := map[string]int{}
	for i, err := range errs {
		id := "j" + strconv.Itoa(i)
		err2 := s.View(ctx, func(r store.Reader) error { _, err := r.Get(ctx, "r", id); return err })
		switch {
		case err == nil:
			if err2 != nil {
				t.Fatalf("%s committed but Get = %v", id, err2)
			}
			owners[strconv.Itoa(i%10)]++
		case errors.Is(err, errBoom), errors.Is(err, store.ErrAlreadyExists):
			if !errors.Is(err2, store.ErrNotFound) {
				t.Fatalf("%s failed (%v) but Get = %v", id, err, err2)
			}
		default:
			t.Fatalf("%s: %v", id, err)
		}
	}
	for k, c := range owners {
		if c != 1 {
			t.Fatalf("key %s has %d owners", k, c)
		}
	}
}

// TestLinger: after a batch of more than one Update (concurrent load) the writer waits, up to
// MaxLinger, for the next Update before committing, so it joins the same transaction; a lone
// Update after a lone Update is committed at once.
func TestLinger(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Options{MaxBatch: 2, MaxLinger: time.Hour})
	put := func(id string) func(store.Tx) error {
		return func(tx store.Tx) error { return tx.Put(ctx, store.Record{Kind: "r", ID: id, OrgID: "o"}) }
	}
	// A lone Update on an idle store does not wait (with an hour's linger, this would hang).
	if err := s.Update(ctx, put("alone")); err != nil {
		t.Fatal(err)
	}
	if got := s.w.lingerFor(); got != 0 {
		t.Fatalf("after a batch of one, lingerFor = %v, want 0", got)
	}
	// A batch of two: x holds the writer until y is queued behind it.
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 2)
	go func() {
		done <- s.Update(ctx, func(tx store.Tx) error {
			select {
			case <-entered:
			default:
				close(entered)
			}
			<-release
			return put("x")(tx)
		})
	}()
	<-entered
	go func() { done <- s.Update(ctx, put("y")) }()
	for len(s.w.jobs) < 1 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := s.w.lingerFor(); got != time.Hour {
		t.Fatalf("after a batch of two, lingerFor = %v, want the hour", got)
	}
	// Now a lone Update waits in the writer's open transaction for the next one: both are
	// committed together.
	before, taken := s.w.commits.Load(), s.w.taken.Load()
	go func() { done <- s.Update(ctx, put("a")) }()
	for s.w.taken.Load() == taken {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the Update after a batch of two returned (%v) before the next one came", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := s.Update(ctx, put("b")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := s.w.commits.Load() - before; got != 1 {
		t.Fatalf("%d commits for a and b, want 1", got)
	}
	// A negative MaxLinger never waits.
	s2 := openTemp(t, Options{MaxLinger: -1})
	s2.w.lastBatch = 10
	if got := s2.w.lingerFor(); got != 0 {
		t.Fatalf("MaxLinger -1: lingerFor = %v, want 0", got)
	}
}

// TestUpdateCancelledInQueue: a caller that gives up while queued returns at once and its fn
// never runs.
func TestUpdateCancelledInQueue(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	go s.Update(ctx, func(store.Tx) error { close(entered); <-release; return nil })
	<-entered
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	var ran atomic.Bool
	err := s.Update(cctx, func(store.Tx) error { ran.Store(true); return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Update = %v", err)
	}
	close(release)
	if err := s.Update(ctx, func(store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("abandoned fn ran")
	}
}

// TestCloseFinishesQueuedUpdates: Close lets queued Updates commit, and refuses new ones.
func TestCloseFinishesQueuedUpdates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx store.Tx) error {
				return tx.Put(ctx, store.Record{Kind: "r", ID: strconv.Itoa(i), OrgID: "o"})
			})
			if err == nil {
				ok.Add(1)
			} else if !errors.Is(err, store.ErrClosed) {
				t.Errorf("Update: %v", err)
			}
		}()
	}
	time.Sleep(time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	s.View(ctx, func(r store.Reader) (err error) { n, err = r.Count(ctx, "r", "o", 0); return err })
	if int64(n) != ok.Load() {
		t.Fatalf("%d acknowledged, %d stored", ok.Load(), n)
	}
}

func BenchmarkUpdateParallel(b *testing.B) {
	s := openTemp(b, Options{})
	storetest.BenchmarkUpdates(b, s)
	if c := s.w.commits.Load(); c > 0 {
		b.ReportMetric(float64(s.w.jobsRun.Load())/float64(c), "updates/commit")
	}
}

func BenchmarkUpdateParallelNoGroupCommit(b *testing.B) {
	storetest.BenchmarkUpdates(b, openTemp(b, Options{MaxBatch: 1}))
}

func BenchmarkUpdateSerial(b *testing.B) {
	s := openTemp(b, Options{})
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := strconv.Itoa(i)
		if err := s.Update(ctx, func(tx store.Tx) error {
			return tx.Put(ctx, store.Record{Kind: "r", ID: id, OrgID: "o", Data: []byte(id)})
		}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestWriterPragmas(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var temp, sync int
	if err := s.w.conn.QueryRowContext(context.Background(), "PRAGMA temp_store").Scan(&temp); err != nil {
		t.Fatal(err)
	}
	if err := s.w.conn.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if temp != 2 || sync != 2 {
		t.Fatalf("temp_store=%d (want 2, MEMORY), synchronous=%d (want 2, FULL)", temp, sync)
	}
}

// TestActivityQueriesUseIndexes: the lists, heads and counts of activities the API and the
// dashboard run read an index in order, for one organization or every one, and never scan the
// table or sort it.
func TestActivityQueriesUseIndexes(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := context.Background()
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		org  string
		f    store.ActivityFilter
	}{
		{"an organization's page", "o", store.ActivityFilter{Limit: 11}},
		{"an organization's page after a cursor", "o", store.ActivityFilter{Limit: 11, After: "x"}},
		{"an organization's page before a cursor", "o", store.ActivityFilter{Limit: 11, Before: "x"}},
		{"an organization's range", "o", store.ActivityFilter{Since: since, Limit: 5000}},
		{"every organization's range", "", store.ActivityFilter{Since: since, Limit: 5000}},
		{"every organization's failures", "", store.ActivityFilter{Statuses: []string{store.ActivityStatusFailed},
			Limit: 51, After: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cols := range []string{sqlcore.ActivityColumns, sqlcore.ActivityHeadColumns} {
				query, args, _, err := sqlcore.ListActivities(sqlcore.Question, cols, tc.org, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				plan := queryPlan(t, s, ctx, query, args)
				if !strings.Contains(plan, "USING INDEX activities_") || strings.Contains(plan, "TEMP B-TREE") ||
					strings.Contains(plan, "SCAN activities\n") {
					t.Errorf("%s:\n%s", query, plan)
				}
			}
		})
	}
	query, args, err := sqlcore.CountActivities(sqlcore.Question, "", store.ActivityFilter{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if plan := queryPlan(t, s, ctx, query, args); !strings.Contains(plan, "USING COVERING INDEX activities_created") {
		t.Errorf("%s:\n%s", query, plan)
	}
}

func queryPlan(t *testing.T, s *Store, ctx context.Context, query string, args []any) string {
	t.Helper()
	rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	return plan.String()
}

// TestKeyedListUsesIndexes: a page of the records carrying a key (the accounts of one wallet)
// reads the records in order from their index and checks the key by its index, without
// scanning either table or sorting.
func TestKeyedListUsesIndexes(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := context.Background()
	key := store.Key{Name: "wallet_account.wallet", Value: "w"}
	for _, opts := range []store.ListOptions{{Key: key, Limit: 10}, {Key: key, Limit: 10, After: "x"},
		{Key: key, Limit: 10, Before: "x"}} {
		for _, cols := range []string{sqlcore.RecordColumns, sqlcore.RecordHeadColumns} {
			query, args, _ := sqlcore.ListRecords(sqlcore.Question, cols, "wallet_account", "o", opts)
			plan := queryPlan(t, s, ctx, query, args)
			if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN records\n") ||
				strings.Contains(plan, "SCAN record_keys") {
				t.Errorf("%s:\n%s", query, plan)
			}
		}
	}
}

// TestUserNameKeyMigration: migration 0004 gives the users stored before it their
// user.name_any key, from their user.name key, and SQLite pages a parent's sub-organizations
// holding a user of a name from its indexes.
func TestUserNameKeyMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx store.Tx) error {
		for _, u := range []struct{ id, org, name string }{{"u1", "o1", "alice"}, {"u2", "o2", "a/b c"},
			{"u3", "o3", "alice"}} {
			if err := tx.Insert(ctx, store.Record{Kind: "user", ID: u.id, OrgID: u.org, Data: []byte("{}")},
				store.Key{Name: "user.name", Value: u.org + "/" + u.name}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM schema_migrations WHERE version = 4"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err = Open(ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]string{"alice": "u1@o1 u3@o3", "a/b c": "u2@o2", "o1/alice": ""} {
		var got []string
		err := s.View(ctx, func(r store.Reader) error {
			refs, err := r.Lookup(ctx, "user.name_any", name)
			for _, ref := range refs {
				got = append(got, ref.ID+"@"+ref.OrgID)
			}
			return err
		})
		slices.Sort(got)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("user.name_any %q: %v (%v), want %q", name, got, err, want)
		}
	}
	query, args, _ := sqlcore.ListRecords(sqlcore.Question, sqlcore.RecordHeadColumns, "organization", "p",
		store.ListOptions{OwnerOf: store.Key{Name: "user.name_any", Value: "alice"}, Limit: 10, After: "x"})
	if plan := queryPlan(t, s, ctx, query, args); strings.Contains(plan, "TEMP B-TREE") ||
		strings.Contains(plan, "SCAN records\n") || strings.Contains(plan, "SCAN record_keys") {
		t.Errorf("%s:\n%s", query, plan)
	}
}
