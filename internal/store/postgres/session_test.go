package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/store"
)

// roundTrips counts what is sent to the server: a statement on its own or a batch (one
// pipeline) is one round trip. The first use of a statement on a connection also prepares it,
// which is not counted: the tests warm the pool first.
type roundTrips struct {
	n     atomic.Int64
	stmts atomic.Int64
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	r.stmts.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	r.stmts.Add(int64(d.Batch.Len()))
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func act(id, fp string) store.Activity {
	at := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	return store.Activity{ID: id, OrgID: "o", Fingerprint: fp, Status: "ACTIVITY_STATUS_COMPLETED", Type: "T",
		CreatedAt: at, UpdatedAt: at, Data: []byte(`{"id":"` + id + `"}`)}
}

// TestRoundTrips: plain reads before anything needs the transaction run on their own, BEGIN
// rides with the first statement that needs it and the writes at the end ride with COMMIT, so
// a signing activity (a look-up, a read, the activity) is three round trips and an Update that
// only reads has no BEGIN nor COMMIT.
func TestRoundTrips(t *testing.T) {
	rt := &roundTrips{}
	s := openFresh(t, Options{MaxConns: 1, tracer: rt})
	ctx := context.Background()
	key := store.Key{Name: "k", Value: "v"}
	if err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Put(ctx, store.Record{Kind: "r", ID: "a", OrgID: "o", Data: []byte("x")}, key)
	}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tc := range []struct {
		name   string
		fn     func(tx store.Tx) error
		trips  int64
		stmts  int64
		commit bool // what fn wrote is there afterwards
	}{
		{"nothing", func(store.Tx) error { return nil }, 0, 0, false},
		{"one read", func(tx store.Tx) error {
			_, err := tx.NoLock().Get(ctx, "r", "a")
			return err
		}, 1, 1, false},
		{"reads", func(tx store.Tx) error {
			if _, err := tx.Lookup(ctx, "k", "v"); err != nil {
				return err
			}
			_, err := tx.List(ctx, "r", "o", store.ListOptions{})
			return err
		}, 2, 2, false},
		{"one locking read", func(tx store.Tx) error {
			_, err := tx.Get(ctx, "r", "a")
			return err
		}, 2, 3, false},
		{"one activity", func(tx store.Tx) error {
			return tx.PutActivity(ctx, act("a"+strconv.Itoa(n), "fp"+strconv.Itoa(n)))
		}, 1, 3, true},
		{"signing", func(tx store.Tx) error {
			if _, err := tx.Lookup(ctx, "k", "v"); err != nil {
				return err
			}
			if _, err := tx.NoLock().Get(ctx, "r", "a"); err != nil {
				return err
			}
			return tx.PutActivity(ctx, act("a"+strconv.Itoa(n), "fp"+strconv.Itoa(n)))
		}, 3, 5, true},
		{"a record and an activity", func(tx store.Tx) error {
			err := tx.Put(ctx, store.Record{Kind: "r", ID: "b" + strconv.Itoa(n), OrgID: "o", Data: []byte("x")}, key)
			if err != nil {
				return err
			}
			return tx.PutActivity(ctx, act("a"+strconv.Itoa(n), "fp"+strconv.Itoa(n)))
		}, 1, 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for warm := range 2 { // the first run prepares the statements on the connection
				n++
				before, stmts := rt.n.Load(), rt.stmts.Load()
				if err := s.Update(ctx, tc.fn); err != nil {
					t.Fatal(err)
				}
				if warm == 0 {
					continue
				}
				if got := rt.n.Load() - before; got != tc.trips {
					t.Errorf("%d round trips, want %d", got, tc.trips)
				}
				if got := rt.stmts.Load() - stmts; got != tc.stmts {
					t.Errorf("%d statements, want %d", got, tc.stmts)
				}
				if tc.commit {
					mustActivity(t, s, "a"+strconv.Itoa(n))
				}
			}
		})
	}
}

func mustActivity(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := context.Background()
	if err := s.View(ctx, func(r store.Reader) error { _, err := r.GetActivity(ctx, id); return err }); err != nil {
		t.Fatalf("activity %s: %v", id, err)
	}
}

func activityMissing(t *testing.T, s store.Store, id string) {
	t.Helper()
	ctx := context.Background()
	err := s.View(ctx, func(r store.Reader) error { _, err := r.GetActivity(ctx, id); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("activity %s: %v, want ErrNotFound", id, err)
	}
}

// TestDeferredWriteFails: when a write that Tx acknowledged without waiting fails (here an
// activity whose fingerprint is held), fn runs again with every write sent on its own and sees
// the failure where it made the write; the outcome is what it would have been without deferring.
func TestDeferredWriteFails(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		fn      func(tx store.Tx, seen *[]error) error
		want    error // from Update (errors.Is)
		runs    int
		records []string // records r/<id> there afterwards
		missing []string // and not there
		acts    []string // activities there afterwards
	}{
		{
			name: "the caller returns the conflict",
			fn: func(tx store.Tx, seen *[]error) error {
				err := tx.PutActivity(ctx, act("new", "held"))
				*seen = append(*seen, err)
				return err
			},
			want: store.ErrAlreadyExists, runs: 2,
		},
		{
			name: "the caller carries on after the conflict and commits",
			fn: func(tx store.Tx, seen *[]error) error {
				err := tx.PutActivity(ctx, act("new", "held"))
				*seen = append(*seen, err)
				if err != nil && !errors.Is(err, store.ErrAlreadyExists) {
					return err
				}
				if err := tx.Insert(ctx, store.Record{Kind: "r", ID: "after", OrgID: "o"}); err != nil {
					return err
				}
				return tx.PutActivity(ctx, act("other", "free"))
			},
			runs: 2, records: []string{"after"}, acts: []string{"other"},
		},
		{
			name: "the caller fails on its own after a good deferred write",
			fn: func(tx store.Tx, seen *[]error) error {
				err := tx.PutActivity(ctx, act("new", "free"))
				*seen = append(*seen, err)
				if err != nil {
					return err
				}
				return boom
			},
			want: boom, runs: 1,
		},
		{
			name: "the caller fails on its own after a failed deferred write",
			fn: func(tx store.Tx, seen *[]error) error {
				*seen = append(*seen, tx.PutActivity(ctx, act("new", "held")))
				return boom
			},
			want: boom, runs: 2,
		},
		{
			name: "a deferred write in a savepoint that is rolled back",
			fn: func(tx store.Tx, seen *[]error) error {
				var inner error
				_ = tx.Savepoint(ctx, func(tx store.Tx) error {
					inner = tx.PutActivity(ctx, act("new", "held"))
					return boom
				})
				*seen = append(*seen, inner)
				return tx.PutActivity(ctx, act("other", "free"))
			},
			runs: 2, acts: []string{"other"},
		},
		{
			name: "a deferred record write that fails for real fails the Update",
			fn: func(tx store.Tx, seen *[]error) error {
				// PostgreSQL's text cannot hold this byte sequence (invalid UTF-8).
				err := tx.Put(ctx, store.Record{Kind: "r", ID: "bad\xff", OrgID: "o"})
				*seen = append(*seen, err)
				if err != nil {
					return err
				}
				return tx.Put(ctx, store.Record{Kind: "r", ID: "good", OrgID: "o"})
			},
			runs: 2, missing: []string{"good"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openFresh(t, Options{})
			if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutActivity(ctx, act("holder", "held")) }); err != nil {
				t.Fatal(err)
			}
			var seen []error
			err := s.Update(ctx, func(tx store.Tx) error { return tc.fn(tx, &seen) })
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Update = %v, want %v", err, tc.want)
			}
			if tc.want == nil && len(tc.missing) == 0 && err != nil {
				t.Fatalf("Update = %v", err)
			}
			if len(tc.missing) > 0 && (err == nil || errors.Is(err, errRerun) || errors.Is(err, errDeferredWrite)) {
				t.Fatalf("Update = %v, want the database's error", err)
			}
			if len(seen) != tc.runs {
				t.Fatalf("fn ran %d times, want %d (saw %v)", len(seen), tc.runs, seen)
			}
			if seen[0] != nil {
				t.Fatalf("first run: deferred write returned %v, want nil", seen[0])
			}
			for _, id := range tc.records {
				if err := s.View(ctx, func(r store.Reader) error { _, err := r.Get(ctx, "r", id); return err }); err != nil {
					t.Errorf("record %s: %v", id, err)
				}
			}
			for _, id := range tc.missing {
				err := s.View(ctx, func(r store.Reader) error { _, err := r.Get(ctx, "r", id); return err })
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("record %s: %v, want ErrNotFound", id, err)
				}
			}
			for _, id := range tc.acts {
				mustActivity(t, s, id)
			}
			activityMissing(t, s, "new")
			// The holder is untouched and the connection is fit for more.
			mustActivity(t, s, "holder")
			if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutActivity(ctx, act("later", "later")) }); err != nil {
				t.Fatal(err)
			}
			mustActivity(t, s, "later")
		})
	}
}

// TestConcurrentDeferredWrites: many Updates at once, some of them refused (a held
// fingerprint) and some failing in fn; every Update acknowledged is in the database, and
// nothing of one that was not.
func TestConcurrentDeferredWrites(t *testing.T) {
	s := openFresh(t, Options{MaxConns: 8})
	ctx := context.Background()
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutActivity(ctx, act("holder", "held")) }); err != nil {
		t.Fatal(err)
	}
	const n = 300
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := "a" + strconv.Itoa(i)
			fp := "fp" + strconv.Itoa(i)
			if i%7 == 0 {
				fp = "held"
			}
			errs[i] = s.Update(ctx, func(tx store.Tx) error {
				if err := tx.Put(ctx, store.Record{Kind: "r", ID: id, OrgID: "o", Data: []byte("x")}); err != nil {
					return err
				}
				if err := tx.PutActivity(ctx, act(id, fp)); err != nil {
					return err
				}
				if i%5 == 0 {
					return fmt.Errorf("fn %d fails", i)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		id := "a" + strconv.Itoa(i)
		switch {
		case i%7 == 0:
			if !errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("%s: %v, want ErrAlreadyExists", id, err)
			}
		case i%5 == 0:
			if err == nil || errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("%s: %v, want fn's error", id, err)
			}
		case err != nil:
			t.Errorf("%s: %v", id, err)
		}
		var got error
		if err := s.View(ctx, func(r store.Reader) error {
			if _, err := r.Get(ctx, "r", id); err != nil {
				return err
			}
			_, got = r.GetActivity(ctx, id)
			return nil
		}); err == nil && got == nil {
			if errs[i] != nil {
				t.Errorf("%s: written by an Update that returned %v", id, errs[i])
			}
		} else if errs[i] == nil {
			t.Errorf("%s: acknowledged but not there: %v, %v", id, err, got)
		} else if !errors.Is(err, store.ErrNotFound) || (got != nil && !errors.Is(got, store.ErrNotFound)) {
			t.Errorf("%s: %v, %v", id, err, got)
		}
	}
}

// TestTwoStoresOneFingerprint: two stores on one schema (two processes) race to write
// activities with the same fingerprints, each write deferred to its COMMIT; exactly one per
// fingerprint is acknowledged and kept, the other told ErrAlreadyExists and not written.
func TestTwoStoresOneFingerprint(t *testing.T) {
	url, schema := freshSchema(t)
	ctx := context.Background()
	var stores [2]*Store
	for i := range stores {
		s, err := Open(ctx, url, Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	const n = 40
	errs := make([][2]error, n)
	var wg sync.WaitGroup
	for i := range n {
		for j, s := range stores {
			wg.Go(func() {
				id := fmt.Sprintf("a%d-%d", i, j)
				errs[i][j] = s.Update(ctx, func(tx store.Tx) error {
					if err := tx.Put(ctx, store.Record{Kind: "r", ID: id, OrgID: "o"}); err != nil {
						return err
					}
					return tx.PutActivity(ctx, act(id, "fp"+strconv.Itoa(i)))
				})
			})
		}
	}
	wg.Wait()
	for i := range n {
		won := -1
		for j, err := range errs[i] {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("fingerprint %d: both won", i)
				}
				won = j
			case !errors.Is(err, store.ErrAlreadyExists):
				t.Fatalf("fingerprint %d, store %d: %v", i, j, err)
			}
		}
		if won < 0 {
			t.Fatalf("fingerprint %d: neither won: %v", i, errs[i])
		}
		for j := range 2 {
			id := fmt.Sprintf("a%d-%d", i, j)
			err := stores[1-j].View(ctx, func(r store.Reader) error { _, err := r.Get(ctx, "r", id); return err })
			if (j == won) != (err == nil) {
				t.Errorf("record %s (winner %d): %v", id, won, err)
			}
		}
	}
}
