package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/internal/sqlcore"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// testURL returns LATCHKEY_TEST_DATABASE_URL, or skips the test when it is not set.
func testURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("LATCHKEY_TEST_DATABASE_URL")
	if url == "" {
		t.Skip(
			"LATCHKEY_TEST_DATABASE_URL not set: set it to a PostgreSQL URL (see README, Test it) to run the conformance suite on PostgreSQL",
		)
	}
	return url
}

// freshSchema creates an empty schema with a random name and drops it when the test ends.
// An unreachable server fails the test: the variable says one should be there.
func freshSchema(t testing.TB) (url, schema string) {
	t.Helper()
	url = testURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("LATCHKEY_TEST_DATABASE_URL is set but the server is unreachable: %v", err)
	}
	defer conn.Close(ctx)
	var b [8]byte
	rand.Read(b[:])
	schema = "lk_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return url, schema
}

func openFresh(t testing.TB, opts Options) *Store {
	t.Helper()
	url, schema := freshSchema(t)
	opts.Schema = schema
	s, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() }) // registered after the drop, so it runs before it
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t, Options{}) })
}

func TestMigrations(t *testing.T) {
	url, schema := freshSchema(t)
	ctx := context.Background()
	ms, err := sqlcore.Migrations(migrationsFS())
	if err != nil || len(ms) == 0 {
		t.Fatalf("Migrations: %d, %v", len(ms), err)
	}
	var want []int64
	for _, m := range ms {
		want = append(want, m.Version)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	q := pgx.Identifier{schema}.Sanitize()
	for i := 0; i < 3; i++ { // fresh, then re-opened twice: idempotent
		s, err := Open(ctx, url, Options{Schema: schema})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		s.Close()
		rows, _ := conn.Query(ctx, "SELECT version FROM "+q+".schema_migrations WHERE applied_at > 0 ORDER BY version")
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("open %d: schema_migrations = %v, want %v", i, got, want)
		}
	}
	for _, table := range []string{"records", "record_keys", "activities"} {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
			schema, table).Scan(&n); err != nil ||
			n != 1 {
			t.Fatalf("table %s: %d, %v", table, n, err)
		}
	}
	// tune: activity rows are kept inline, uncompressed, up to a page.
	var opts []string
	if err := conn.QueryRow(ctx, "SELECT reloptions FROM pg_class WHERE oid = $1::regclass",
		schema+".activities").Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(opts) != "[toast_tuple_target=8160]" {
		t.Fatalf("activities reloptions = %v", opts)
	}
}

// TestConcurrentOpen: processes starting together migrate once.
func TestConcurrentOpen(t *testing.T) {
	url, schema := freshSchema(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := Open(context.Background(), url, Options{Schema: schema, MaxConns: 2})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnreachable(t *testing.T) {
	_, err := Open(context.Background(), "postgres://nobody:secretpw@127.0.0.1:1/x?connect_timeout=2", Options{})
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if s := err.Error(); contains(s, "secretpw") {
		t.Fatalf("error shows the password: %s", s)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func BenchmarkUpdateParallel(b *testing.B) {
	storetest.BenchmarkUpdates(b, openFresh(b, Options{}))
}

// TestDeadlockIsRetried: two Updates lock two records in opposite orders; PostgreSQL aborts
// one with 40P01, and Update runs its fn again, so both succeed.
func TestDeadlockIsRetried(t *testing.T) {
	s := openFresh(t, Options{})
	ctx := context.Background()
	if err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.Insert(ctx, store.Record{Kind: "r", ID: "a", OrgID: "o", Data: []byte("0")}); err != nil {
			return err
		}
		return tx.Insert(ctx, store.Record{Kind: "r", ID: "b", OrgID: "o", Data: []byte("0")})
	}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	var both sync.WaitGroup
	both.Add(2)
	lockBoth := func(first, second string) func(store.Tx) error {
		var tried atomic.Bool
		return func(tx store.Tx) error {
			attempts.Add(1)
			if _, err := tx.Get(ctx, "r", first); err != nil {
				return err
			}
			if !tried.Swap(true) {
				both.Done()
				both.Wait() // both hold their first lock: each now waits for the other's
			}
			r, err := tx.Get(ctx, "r", second)
			if err != nil {
				return err
			}
			r.Data = append(r.Data, '+')
			return tx.Put(ctx, r)
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- s.Update(ctx, lockBoth("a", "b")) }()
	go func() { errs <- s.Update(ctx, lockBoth("b", "a")) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	if n := attempts.Load(); n < 3 {
		t.Fatalf("%d attempts, want a retry", n)
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "40001"}, true},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "40P01"}), true},
		{&pgconn.PgError{Code: "23505"}, false},
		{store.ErrNotFound, false},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("retryable(%v) = %v", tc.err, got)
		}
	}
}

// TestUserNameKeyMigration: migration 0003 gives the users stored before it their
// user.name_any key, from their user.name key, leaving out a value stored encoded.
func TestUserNameKeyMigration(t *testing.T) {
	url, schema := freshSchema(t)
	ctx := context.Background()
	s, err := Open(ctx, url, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx store.Tx) error {
		for _, u := range []struct{ id, org, name string }{{"u1", "o1", "alice"}, {"u2", "o2", "a/b c"},
			{"u3", "o3", "alice"}, {"u4", "o4", "nul\x00name"}} {
			if err := tx.Insert(ctx, store.Record{Kind: "user", ID: u.id, OrgID: u.org, Data: []byte("{}")},
				store.Key{Name: "user.name", Value: u.org + "/" + u.name}); err != nil {
				return err
			}
		}
		return nil
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "DELETE FROM "+q+".schema_migrations WHERE version = 3"); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, url, Options{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]string{"alice": "u1@o1 u3@o3", "a/b c": "u2@o2", "nul\x00name": ""} {
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
}
