package postgres

import (
	"context"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store/storetest"
)

// TestListenerFollowsThePool: the listening connection reaches another server than the pool (a
// failover behind one address, the listener reconnecting first); the cache is told the
// connection is down, and stays down, until the pool reaches that server too.
func TestListenerFollowsThePool(t *testing.T) {
	a, b := storetest.PrivateCluster(t), storetest.PrivateCluster(t)
	ctx := context.Background()
	for _, u := range []string{a, b} { // the same schema on both, as a promoted standby has it
		s, err := Open(ctx, u, Options{Schema: "public"})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	p, purl := newProxy(t, a)
	s, err := Open(ctx, purl, Options{Schema: "public"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var up, down atomic.Int32
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.Listen(lctx, Listener{
		Notify: func(string) {},
		Up:     func() { up.Add(1) },
		Live:   func(time.Time) {},
		Down:   func() { down.Add(1) },
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; !cond(); i++ {
			if i == 1000 {
				t.Fatalf("waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the listener", func() bool { return up.Load() == 1 })

	// b takes a's address; every connection is reset. The listener reconnects at once, to b;
	// the pool has not reached b yet: the listener must stay down, retrying.
	p.setTarget(mustHost(t, b))
	p.resetAll()
	waitFor("the listener to retry", func() bool { return down.Load() >= 3 })
	if up.Load() != 1 {
		t.Fatal("the listener came up on a server the pool does not reach")
	}
	// The pool reaches b: the listener comes up there.
	if err := s.Update(ctx, putRecord("r")); err != nil {
		t.Fatal(err)
	}
	waitFor("the listener up on the pool's server", func() bool { return up.Load() == 2 })
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
