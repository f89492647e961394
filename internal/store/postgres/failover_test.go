package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"

	"github.com/latchkey/latchkey/internal/store"
)

// openVia opens a store on a fresh schema through a failing proxy.
func openVia(t testing.TB, opts Options) (*Store, *proxy) {
	t.Helper()
	url, schema := freshSchema(t)
	p, purl := newProxy(t, url)
	opts.Schema = schema
	s, err := Open(context.Background(), purl, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

// within runs f and fails the test if it has not returned after a minute (a hang).
func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("still waiting after a minute")
		return nil
	}
}

func putRecord(id string) func(store.Tx) error {
	return func(tx store.Tx) error {
		return tx.Put(context.Background(), store.Record{Kind: "k", ID: id, OrgID: "o", Data: []byte(`{}`)})
	}
}

// TestConnectionsResetBeforeCommit: every connection of the pool is reset (a primary killed
// and restarted, or a standby promoted behind the same address); Updates and reads that meet
// the dead connections run again on new ones instead of failing.
func TestConnectionsResetBeforeCommit(t *testing.T) {
	for _, groups := range []int{-1, 2} {
		s, p := openVia(t, Options{CommitGroups: groups})
		ctx := context.Background()
		for i := range 4 {
			if err := s.Update(ctx, putRecord("warm"+string(rune('a'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		p.resetAll()
		for i, fn := range []func(store.Tx) error{putRecord("after"), putActivity(act("a1", "fp1"))} {
			if err := within(t, func() error { return s.Update(ctx, fn) }); err != nil {
				t.Fatalf("groups %d: Update %d after the reset: %v", groups, i, err)
			}
		}
		p.resetAll()
		err := within(t, func() error {
			return s.View(ctx, func(r store.Reader) error {
				_, err := r.Get(ctx, "k", "after")
				return err
			})
		})
		if err != nil {
			t.Fatalf("groups %d: read after the reset: %v", groups, err)
		}
	}
}

// TestTerminatedBackends: the server ends the pool's backends (pg_terminate_backend: what a
// shutting-down primary does, SQLSTATE 57P01); the next Update and read succeed.
func TestTerminatedBackends(t *testing.T) {
	url, schema := freshSchema(t)
	app := "lk_term_" + schema[len("lk_test_"):]
	s, err := Open(context.Background(), url+"&application_name="+app, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Update(ctx, putRecord("r")); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	terminate := func() {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1`, app).Scan(&n)
		if err != nil || n == 0 {
			t.Fatalf("terminated %d backends: %v", n, err)
		}
	}
	terminate()
	if err := s.Update(ctx, putRecord("r2")); err != nil {
		t.Fatalf("Update after the backends were terminated: %v", err)
	}
	terminate()
	err = s.View(ctx, func(r store.Reader) error {
		_, err := r.Get(ctx, "k", "r2")
		return err
	})
	if err != nil {
		t.Fatalf("read after the backends were terminated: %v", err)
	}
}

// TestReadOnlyPrimaryIsRetried: a primary demoted to a standby answers writes with
// read_only_sql_transaction (25006); the Update waits until a writable server is reached.
func TestReadOnlyPrimaryIsRetried(t *testing.T) {
	url, schema := freshSchema(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := "lk_ro_" + schema[len("lk_test_"):]
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN SUPERUSER"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE "+role) })
	roURL := strings.Replace(url, "postgres://postgres@", "postgres://"+role+"@", 1) + "&application_name=" + role
	var lostSeen atomic.Int32
	s, err := Open(ctx, roURL, Options{Schema: schema, OnLost: func() { lostSeen.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The server turns read-only: new sessions are, and the old ones end.
	if _, err := admin.Exec(ctx, "ALTER ROLE "+role+" SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1`, role); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Update(ctx, putRecord("w")) }()
	for lostSeen.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("Update returned before the server became writable: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := admin.Exec(ctx, "ALTER ROLE "+role+" RESET default_transaction_read_only"); err != nil {
		t.Fatal(err)
	}
	if err := within(t, func() error { return <-done }); err != nil {
		t.Fatalf("Update once the server is writable: %v", err)
	}
}

// TestCommitAnswerLost: the connection dies after COMMIT was sent. The Update finds out what
// happened: committed (acknowledged, fn run once) or not (fn run again, committed once).
func TestCommitAnswerLost(t *testing.T) {
	for _, groups := range []int{-1, 2} {
		for _, mode := range []string{"pass-then-cut", "cut"} {
			s, p := openVia(t, Options{CommitGroups: groups})
			ctx := context.Background()
			if err := s.Update(ctx, putRecord("warm")); err != nil {
				t.Fatal(err)
			}
			s.pool.Reset() // fresh connections send COMMIT's text, which the proxy looks for
			p.cutAtCommit(mode)
			runs := 0
			a := act("a-"+mode, "fp-"+mode)
			err := within(t, func() error {
				return s.Update(ctx, func(tx store.Tx) error {
					runs++
					return tx.PutActivity(ctx, a)
				})
			})
			if err != nil {
				t.Fatalf("groups %d, %s: %v", groups, mode, err)
			}
			if p.cutCount() != 1 {
				t.Fatalf("groups %d, %s: the proxy cut %d COMMITs, want 1", groups, mode, p.cutCount())
			}
			want := map[string]int{"pass-then-cut": 1, "cut": 2}[mode]
			if runs != want {
				t.Fatalf("groups %d, %s: fn ran %d times, want %d", groups, mode, runs, want)
			}
			mustActivity(t, s, a.ID)
		}
	}
}

// TestCommitAnswerLostStoreGone: the store does not come back within the budget, or the
// transaction wrote no activity to look for: the outcome is unknown, and said so.
func TestCommitAnswerLostStoreGone(t *testing.T) {
	ctx := context.Background()
	s, p := openVia(t, Options{CommitGroups: -1, RetryFor: 300 * time.Millisecond})
	if err := s.Update(ctx, putRecord("warm")); err != nil {
		t.Fatal(err)
	}
	s.pool.Reset()
	p.cutAtCommit("cut-and-refuse")
	err := within(t, func() error { return s.Update(ctx, putActivity(act("gone", "fp-gone"))) })
	if !errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("store gone: got %v, want ErrOutcomeUnknown", err)
	}
	p.setRefuse(false)
	s.pool.Reset()
	p.cutAtCommit("pass-then-cut")
	err = within(t, func() error { return s.Update(ctx, putRecord("no-activity")) })
	if !errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("no activity: got %v, want ErrOutcomeUnknown", err)
	}
}

// TestStoppedServer: the server stops answering without closing its connections (its processes
// stopped, or a network that drops everything); an Update and a read give the connection up
// after StallTimeout and carry on on a new one.
func TestStoppedServer(t *testing.T) {
	for _, groups := range []int{-1, 2} {
		s, p := openVia(t, Options{CommitGroups: groups, StallTimeout: 300 * time.Millisecond})
		ctx := context.Background()
		if err := s.Update(ctx, putRecord("warm")); err != nil {
			t.Fatal(err)
		}
		p.freezeAll()
		if err := within(t, func() error { return s.Update(ctx, putActivity(act("s1", "fp-s1"))) }); err != nil {
			t.Fatalf("groups %d: Update with the server stopped: %v", groups, err)
		}
		p.freezeAll()
		err := within(t, func() error {
			return s.View(ctx, func(r store.Reader) error {
				_, err := r.GetActivity(ctx, "s1")
				return err
			})
		})
		if err != nil {
			t.Fatalf("groups %d: read with the server stopped: %v", groups, err)
		}
	}
}

// TestStoreGoneIsUnavailable: when the store does not come back, reads and Updates fail with
// store.ErrUnavailable (which the API answers 503), not a bare driver error.
func TestStoreGoneIsUnavailable(t *testing.T) {
	ctx := context.Background()
	s, p := openVia(t, Options{RetryFor: 200 * time.Millisecond})
	p.setRefuse(true)
	p.resetAll()
	err := s.Update(ctx, putRecord("x"))
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Update: %v, want ErrUnavailable", err)
	}
	err = s.View(ctx, func(r store.Reader) error {
		_, err := r.Get(ctx, "k", "x")
		return err
	})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("read: %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ping: %v, want ErrUnavailable", err)
	}
	// The request's own deadline, shorter than the budget, ends the wait the same way.
	s2, p2 := openVia(t, Options{})
	p2.setRefuse(true)
	p2.resetAll()
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := s2.Update(dctx, putRecord("y")); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Update past its deadline: %v, want ErrUnavailable", err)
	}
}

// TestDeadPeerSocketOptions: every connection has keepalive and TCP_USER_TIMEOUT, so a peer
// that vanished is noticed within seconds.
func TestDeadPeerSocketOptions(t *testing.T) {
	s := openFresh(t, Options{})
	pc, err := s.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	tc, ok := pc.Conn().PgConn().Conn().(*net.TCPConn)
	if !ok {
		t.Skipf("not a TCP connection: %T", pc.Conn().PgConn().Conn())
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var keepalive, idle, userTimeout int
	var serr error
	err = raw.Control(func(fd uintptr) {
		get := func(level, opt int, v *int) {
			if serr == nil {
				*v, serr = syscall.GetsockoptInt(int(fd), level, opt)
			}
		}
		get(syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, &keepalive)
		get(syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, &idle)
		get(syscall.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, &userTimeout)
	})
	if err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if keepalive != 1 || idle != int((deadPeer/2).Seconds()) || userTimeout != int(deadPeer.Milliseconds()) {
		t.Fatalf("keepalive %d, idle %ds, TCP_USER_TIMEOUT %dms", keepalive, idle, userTimeout)
	}
}

// TestLost: which driver failures are a lost store.
func TestLost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "25006"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "40001"}, false},
		{syscall.ECONNREFUSED, true},
		{errors.New("postgres: commit: " + "unexpected EOF"), false},
		{store.ErrNotFound, false},
	} {
		if got := lost(tc.err); got != tc.want {
			t.Errorf("lost(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// BenchmarkUpdateAfterReset: what an Update pays when every connection of the pool was reset
// just before it (a primary restarted behind the same address): it finds the dead connections,
// drops them and commits on a new one.
func BenchmarkUpdateAfterReset(b *testing.B) {
	s, p := openVia(b, Options{})
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		if err := s.Update(ctx, putRecord("warm")); err != nil {
			b.Fatal(err)
		}
		p.resetAll()
		b.StartTimer()
		if err := s.Update(ctx, putActivity(act(fmt.Sprint("r", i), fmt.Sprint("fp-r", i)))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitAnswerLost: what an Update pays when the answer to its COMMIT is lost (the
// connection cut after the server committed): it reconnects, reads its activity back and
// makes sure it is replicated.
func BenchmarkCommitAnswerLost(b *testing.B) {
	s, p := openVia(b, Options{CommitGroups: -1})
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s.pool.Reset()
		p.cutAtCommit("pass-then-cut")
		b.StartTimer()
		if err := s.Update(ctx, putActivity(act(fmt.Sprint("c", i), fmt.Sprint("fp-c", i)))); err != nil {
			b.Fatal(err)
		}
	}
	if p.cutCount() != b.N {
		b.Fatalf("%d cuts for %d Updates", p.cutCount(), b.N)
	}
}

// BenchmarkUpdateOneConnection: the cost of an Update with nothing failing, through the same
// proxy (the baseline of the two above).
func BenchmarkUpdateOneConnection(b *testing.B) {
	s, _ := openVia(b, Options{})
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if err := s.Update(ctx, putActivity(act(fmt.Sprint("u", i), fmt.Sprint("fp-u", i)))); err != nil {
			b.Fatal(err)
		}
	}
}
