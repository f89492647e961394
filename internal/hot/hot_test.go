package hot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

const (
	kindThing = "thing"
	kindOther = "other"
	org       = "org-1"
)

// stores opens one store of each driver available (PostgreSQL when LATCHKEY_TEST_DATABASE_URL
// is set), each in a fresh file or schema; open may be called twice for a second "process" on
// the same data.
func stores(t *testing.T) map[string]func() store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	out := map[string]func() store.Store{"sqlite": func() store.Store {
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
	url := os.Getenv("LATCHKEY_TEST_DATABASE_URL")
	if url == "" {
		return out
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("PostgreSQL unreachable: %v", err)
	}
	schema := "lk_hot_" + strings.ReplaceAll(id.New(), "-", "")[:16]
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	out["postgres"] = func() store.Store {
		s, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return out
}

// fixture is one "process": its store behind Wrap and a cache of the thing's value.
type fixture struct {
	t     *testing.T
	st    *Store
	cache *Cache[int]
}

func newFixture(t *testing.T, raw store.Store) *fixture {
	v := NewVersions()
	st := Wrap(raw, v, kindThing)
	st.Watch()
	t.Cleanup(func() { st.Close() })
	return &fixture{t: t, st: st, cache: NewCache[int](v, 0)}
}

func put(ctx context.Context, st store.Store, kind string, n int) error {
	return st.Update(ctx, func(tx store.Tx) error {
		now := time.Now().UTC()
		return tx.Put(
			ctx,
			store.Record{
				Kind:      kind,
				ID:        "a",
				OrgID:     org,
				Data:      []byte(strconv.Itoa(n)),
				CreatedAt: now,
				UpdatedAt: now,
			},
		)
	})
}

// read returns the thing's value from the cache, or from the store (and caches it).
func (f *fixture) read(ctx context.Context) (int, error) {
	if n, ok := f.cache.Get(ctx, "a"); ok {
		return n, nil
	}
	tok := f.cache.Versions().Token(org)
	var n int
	err := f.st.View(ctx, func(r store.Reader) error {
		rec, err := r.Get(ctx, kindThing, "a")
		if err != nil {
			return err
		}
		n, err = strconv.Atoi(string(rec.Data))
		return err
	})
	if err != nil {
		return 0, err
	}
	f.cache.Put("a", tok, n)
	return n, nil
}

// waitHit reads until the cache serves the value want (a listener may still be starting).
func (f *fixture) waitHit(ctx context.Context, want int) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := f.cache.Hits()
		n, err := f.read(ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		if n == want && f.cache.Hits() > before {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the cache never served %d (last read %d)", want, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eachStore runs test on every driver available.
func eachStore(t *testing.T, test func(t *testing.T, open func() store.Store)) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) { test(t, open) })
	}
}

// cached opens a "process" on open whose cache serves the thing's value n.
func cached(t *testing.T, open func() store.Store, n int) *fixture {
	f := newFixture(t, open())
	f.put(kindThing, n)
	f.waitHit(context.Background(), n)
	return f
}

// put writes the thing (or another kind) through the fixture's store.
func (f *fixture) put(kind string, n int) {
	f.t.Helper()
	if err := put(context.Background(), f.st, kind, n); err != nil {
		f.t.Fatal(err)
	}
}

// TestNeverServesAfterCommit: readers racing a writer never get a value older than the last
// Update that has returned, and the cache is used in between.
func TestNeverServesAfterCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		f := cached(t, open, 0)
		var committed atomic.Int64
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					c := committed.Load()
					n, err := f.read(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if int64(n) < c {
						t.Errorf("served %d after the Update writing %d returned", n, c)
						return
					}
				}
			})
		}
		for i := 1; i <= 100; i++ {
			f.put(kindThing, i)
			committed.Store(int64(i))
			time.Sleep(time.Millisecond)
		}
		close(done)
		wg.Wait()
		f.waitHit(ctx, 100)
	})
}

// TestUnwatchedKindsKeepTheCache: writing a kind the cache does not hold (an activity's
// records) leaves it valid; a failed Update of a watched kind invalidates, harmlessly.
func TestUnwatchedKindsKeepTheCache(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		f := cached(t, open, 1)
		f.put(kindOther, 2)
		before := f.cache.Hits()
		if n, err := f.read(ctx); err != nil || n != 1 || f.cache.Hits() != before+1 {
			t.Fatalf("after another kind's write: %d, %v, hit %v", n, err, f.cache.Hits() > before)
		}
		boom := errors.New("boom")
		err := f.st.Update(ctx, func(tx store.Tx) error {
			now := time.Now().UTC()
			if err := tx.Put(ctx, store.Record{Kind: kindThing, ID: "a", OrgID: org, Data: []byte("9"), CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		f.waitHit(ctx, 1)
	})
}

// TestDeleteInvalidates: Delete names no organization; the wrapper finds it.
func TestDeleteInvalidates(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		f := cached(t, open, 1)
		if err := f.st.Update(ctx, func(tx store.Tx) error { return tx.Delete(ctx, kindThing, "a") }); err != nil {
			t.Fatal(err)
		}
		if _, err := f.read(ctx); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("read after delete: %v, want not found", err)
		}
	})
}

// TestAnotherProcessWrites: a second store on the same data (another process: the CLI beside
// serve on SQLite, another replica on PostgreSQL) writes. On PostgreSQL the first never
// serves the old value once the write has committed (the barrier); on SQLite it stops within
// the writer's look-out (SQLitePoll).
func TestAnotherProcessWrites(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		f := cached(t, open, 1)
		other := newFixture(t, open())
		other.put(kindThing, 2)
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := f.read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 2 {
				break
			}
			if f.st.Dialect() == "postgres" {
				t.Fatalf("served %d after the other process's write of 2 committed", n)
			}
			if time.Now().After(deadline) {
				t.Fatal("the other process's write was never seen")
			}
			time.Sleep(5 * time.Millisecond)
		}
		f.waitHit(ctx, 2)
	})
}

// TestDownServesNothing: while the listener is down nothing is served or stored.
func TestDownServesNothing(t *testing.T) {
	v := NewVersions()
	c := NewCache[int](v, 0)
	c.Put("k", v.Token(org), 1)
	if _, ok := c.Get(context.Background(), "k"); !ok {
		t.Fatal("not served while live")
	}
	v.Down()
	if _, ok := c.Get(context.Background(), "k"); ok {
		t.Fatal("served while down")
	}
	c.Put("k", v.Token(org), 2)
	if _, ok := c.Get(context.Background(), "k"); ok {
		t.Fatal("stored while down")
	}
	v.Reset()
	v.LiveUntil(time.Now().Add(time.Hour))
	c.Put("k", v.Token(org), 3)
	if n, ok := c.Get(context.Background(), "k"); !ok || n != 3 {
		t.Fatalf("after coming up: %d, %v", n, ok)
	}
	v.LiveUntil(time.Now().Add(-time.Millisecond))
	if _, ok := c.Get(context.Background(), "k"); ok {
		t.Fatal("served after the listener's deadline passed")
	}
}

func TestPayload(t *testing.T) {
	v := NewVersions()
	c := NewCache[int](v, 0)
	c.Put("k", v.Token(org), 1)
	for _, tc := range []struct {
		payload string
		kept    bool
	}{
		{"me:" + org, true}, // this process's own: already applied
		{"other:org-2,org-3", true},
		{"other:org-2," + org, false},
		{"other:*", false},
		{"garbled", false},
	} {
		v.applyPayload("me", tc.payload)
		if _, ok := c.Get(context.Background(), "k"); ok != tc.kept {
			t.Errorf("%q: kept %v, want %v", tc.payload, ok, tc.kept)
		}
		c.Put("k", v.Token(org), 1)
	}
	long := make([]string, 1000)
	for i := range long {
		long[i] = id.New()
	}
	if p := encodePayload("me", long); p != "me:*" {
		t.Errorf("a long list is sent as %d bytes, want me:*", len(p))
	}
}

// TestOptionalCapabilities: what the drivers offer beside store.Store (the keyring's scan, the
// dashboard's totals) is still offered behind Wrap.
func TestOptionalCapabilities(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		f := cached(t, open, 1)
		var st store.Store = f.st
		ck, ok := st.(interface {
			CountKind(ctx context.Context, kind string) (int, error)
		})
		if !ok {
			t.Fatal("no CountKind behind Wrap")
		}
		if n, err := ck.CountKind(ctx, kindThing); err != nil || n != 1 {
			t.Fatalf("CountKind = %d, %v", n, err)
		}
		ex, ok := st.(store.Exporter)
		if !ok {
			t.Fatal("no Exporter behind Wrap")
		}
		if kinds, err := ex.RecordKinds(ctx); err != nil || kinds[kindThing] != 1 {
			t.Fatalf("RecordKinds = %v, %v", kinds, err)
		}
	})
}

// TestBarrierOncePerRequest: a request (PerRequest) waits at the barrier before its first cached
// read only; reads outside a request each wait; without a barrier PerRequest changes nothing.
func TestBarrierOncePerRequest(t *testing.T) {
	v := NewVersions()
	plain := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := v.PerRequest(plain); reflect.ValueOf(got).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Fatal("PerRequest wrapped the handler of versions without a barrier")
	}
	var waits atomic.Int64
	v.barrier = func(context.Context) error { waits.Add(1); return nil }
	c := NewCache[int](v, 0)
	c.Put("a", v.Token(org), 1)
	c.Put("b", v.Token("org-2"), 2)
	read := func(ctx context.Context) {
		for _, k := range []string{"a", "b", "a"} {
			if _, ok := c.Get(ctx, k); !ok {
				t.Fatalf("%s not served", k)
			}
		}
	}
	read(context.Background())
	if n := waits.Swap(0); n != 3 {
		t.Fatalf("three reads outside a request waited %d times, want 3", n)
	}
	v.PerRequest(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { read(r.Context()) })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if n := waits.Swap(0); n != 1 {
		t.Fatalf("three reads in one request waited %d times, want 1", n)
	}
	// A failed wait settles nothing: the next read waits again (and is served once it passes).
	fail := true
	v.barrier = func(context.Context) error {
		waits.Add(1)
		if fail {
			fail = false
			return errors.New("listener down")
		}
		return nil
	}
	v.PerRequest(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if _, ok := c.Get(r.Context(), "a"); ok {
			t.Error("served although the barrier failed")
		}
		c.Put("a", v.Token(org), 1)
		if _, ok := c.Get(r.Context(), "a"); !ok {
			t.Error("not served after the barrier passed")
		}
		if _, ok := c.Get(r.Context(), "a"); !ok {
			t.Error("not served on the third read")
		}
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if n := waits.Load(); n != 2 {
		t.Fatalf("a failed wait then two reads waited %d times, want 2", n)
	}
}

// TestUnchanged: a transaction may trust a valid Token instead of reading; with a barrier
// (PostgreSQL) only once the barrier was passed, for the request or now.
func TestUnchanged(t *testing.T) {
	ctx := context.Background()
	v := NewVersions()
	tok := v.Token(org)
	if !v.Unchanged(ctx, &tok) {
		t.Fatal("a valid token without a barrier is not Unchanged")
	}
	v.Changed(org)
	if v.Unchanged(ctx, &tok) {
		t.Fatal("Unchanged after the organization changed")
	}
	tok = v.Token(org)
	var waits atomic.Int64
	down := false
	v.barrier = func(context.Context) error {
		waits.Add(1)
		if down {
			return errors.New("listener down")
		}
		return nil
	}
	if !v.Unchanged(ctx, &tok) || waits.Load() != 1 {
		t.Fatalf("outside a request: Unchanged after %d waits, want true after 1", waits.Load())
	}
	down = true
	if v.Unchanged(ctx, &tok) {
		t.Fatal("Unchanged although the barrier could not be passed")
	}
	down = false
	waits.Store(0)
	v.PerRequest(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if _, ok := NewCache[int](v, 0).Get(r.Context(), "x"); ok { // a read that misses: no wait
			t.Error("served from an empty cache")
		}
		for range 3 {
			if !v.Unchanged(r.Context(), &tok) {
				t.Error("not Unchanged in a request")
			}
		}
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if n := waits.Load(); n != 1 {
		t.Fatalf("three checks in one request waited %d times, want 1", n)
	}
	v.Changed(org)
	if v.Unchanged(ctx, &tok) {
		t.Fatal("Unchanged after the organization changed (with a barrier)")
	}
}

// TestUnchangedSeesAnotherProcess: a transaction's check (Unchanged) with a Token taken before
// another process committed a write to the organization fails in a request that came after
// that commit: on PostgreSQL the request's barrier applies the other process's notification
// first; on SQLite the writer's look-out drops every Token within SQLitePoll.
func TestUnchangedSeesAnotherProcess(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		f := cached(t, open, 1)
		v := f.cache.Versions()
		tok := v.Token(org)
		if !v.Unchanged(ctx, &tok) {
			t.Fatal("a fresh token is not Unchanged")
		}
		other := newFixture(t, open())
		other.put(kindThing, 2)
		if f.st.Dialect() == "postgres" {
			var got bool
			v.PerRequest(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got = v.Unchanged(r.Context(), &tok)
			})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil))
			if got {
				t.Fatal("Unchanged in a request that came after another process's commit")
			}
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for v.Unchanged(ctx, &tok) {
			if time.Now().After(deadline) {
				t.Fatal("another process's commit never made the token stale")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
