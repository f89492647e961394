package postgres

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

// hold takes the committer's one slot once it is idle, so that Updates queue until release
// sends them, all in one group.
func hold(t *testing.T, s *Store) (waiting func() int, release func()) {
	t.Helper()
	c := s.group
	if c == nil || c.maxGroups != 1 {
		t.Fatal("the store needs CommitGroups: 1")
	}
	// Wait for the committer to be idle: the goroutine that sent an earlier group may still be
	// on its way out, and would take what queues next.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		idle := c.running == 0
		if idle {
			c.running++
		}
		c.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the committer never became idle")
		}
		time.Sleep(time.Millisecond)
	}
	waiting = func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queue)
	}
	return waiting, func() { go c.run() }
}

// queued starts one Update per fn and returns once all of them wait in the committer.
func queued(t *testing.T, s *Store, waiting func() int, fns []func(store.Tx) error) (errs []error, wait func()) {
	t.Helper()
	errs = make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = s.Update(context.Background(), fn) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for waiting() < len(fns) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Updates reached the committer", waiting(), len(fns))
		}
		time.Sleep(time.Millisecond)
	}
	return errs, wg.Wait
}

func putActivity(a store.Activity) func(store.Tx) error {
	return func(tx store.Tx) error { return tx.PutActivity(context.Background(), a) }
}

// TestGroupCommit: Updates that owe only their deferred writes are committed together, in one
// transaction and one round trip, and each is acknowledged.
func TestGroupCommit(t *testing.T) {
	rt := &roundTrips{}
	var mu sync.Mutex
	var commits []int
	s := openFresh(t, Options{MaxConns: 2, CommitGroups: 1, tracer: rt, OnCommit: func(n int, _ time.Duration) {
		mu.Lock()
		commits = append(commits, n)
		mu.Unlock()
	}})
	ctx := context.Background()
	waiting, release := hold(t, s)
	var fns []func(store.Tx) error
	for i := range 5 {
		fns = append(fns, putActivity(act("g"+strconv.Itoa(i), "fp"+strconv.Itoa(i))))
	}
	// One that also writes a record (deferred: no unique key).
	fns = append(fns, func(tx store.Tx) error {
		if err := tx.Put(ctx, store.Record{Kind: "r", ID: "rec", OrgID: "o", Data: []byte("x")}); err != nil {
			return err
		}
		return tx.PutActivity(ctx, act("g5", "fp5"))
	})
	errs, wait := queued(t, s, waiting, fns)
	before := rt.n.Load()
	release()
	wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	if got := rt.n.Load() - before; got != 1 {
		t.Errorf("%d round trips for the group, want 1", got)
	}
	mu.Lock()
	if len(commits) != 1 || commits[0] != len(fns) {
		t.Errorf("commits %v, want one of %d Updates", commits, len(fns))
	}
	mu.Unlock()
	for i := range 6 {
		mustActivity(t, s, "g"+strconv.Itoa(i))
	}
	if err := s.View(ctx, func(r store.Reader) error { _, err := r.Get(ctx, "r", "rec"); return err }); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitRefusedWrite: when the server refuses one Update's write, nothing of the group
// is kept by that transaction; the refused Update runs fn again and sees the refusal, and every
// other Update commits on its own, as if it had never been grouped.
func TestGroupCommitRefusedWrite(t *testing.T) {
	s := openFresh(t, Options{MaxConns: 2, CommitGroups: 1})
	ctx := context.Background()
	if err := s.Update(ctx, putActivity(act("holder", "held"))); err != nil {
		t.Fatal(err)
	}
	waiting, release := hold(t, s)
	var runs [3]int
	fn := func(i int, a store.Activity) func(store.Tx) error {
		return func(tx store.Tx) error {
			runs[i]++
			return tx.PutActivity(ctx, a)
		}
	}
	errs, wait := queued(t, s, waiting, []func(store.Tx) error{
		fn(0, act("before", "fp-before")),
		fn(1, act("refused", "held")),
		fn(2, act("after", "fp-after")),
	})
	release()
	wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the others: %v, %v; want both committed", errs[0], errs[2])
	}
	if !errors.Is(errs[1], store.ErrAlreadyExists) {
		t.Fatalf("the refused one: %v, want ErrAlreadyExists", errs[1])
	}
	if runs != [3]int{1, 2, 1} {
		t.Fatalf("fn runs %v, want the refused one run again and the others once", runs)
	}
	mustActivity(t, s, "before")
	mustActivity(t, s, "after")
	activityMissing(t, s, "refused")
	// The connections went back to the pool fit for use.
	for i := range 4 {
		if err := s.Update(ctx, putActivity(act("later"+strconv.Itoa(i), "later"+strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitOnlyDeferred: an Update that began its transaction (a locking read, a write
// with a unique key) commits alone; the group carries only what owes nothing but its writes.
func TestGroupCommitOnlyDeferred(t *testing.T) {
	s := openFresh(t, Options{MaxConns: 4, CommitGroups: 1})
	ctx := context.Background()
	if err := s.Update(ctx, func(tx store.Tx) error {
		return tx.Put(ctx, store.Record{Kind: "r", ID: "a", OrgID: "o", Data: []byte("x")})
	}); err != nil {
		t.Fatal(err)
	}
	waiting, release := hold(t, s)
	defer release()
	// With the committer held, these finish: neither waits for it.
	for _, fn := range []func(store.Tx) error{
		func(tx store.Tx) error {
			if _, err := tx.Get(ctx, "r", "a"); err != nil {
				return err
			}
			return tx.PutActivity(ctx, act("locked", "fp-locked"))
		},
		func(tx store.Tx) error {
			return tx.Put(ctx, store.Record{Kind: "r", ID: "u", OrgID: "o"}, store.Key{Name: "n", Value: "v", Unique: true})
		},
		func(tx store.Tx) error { _, err := tx.NoLock().Get(ctx, "r", "a"); return err },
	} {
		if err := s.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	if n := waiting(); n != 0 {
		t.Fatalf("%d Updates wait in the committer, want 0", n)
	}
	mustActivity(t, s, "locked")
}
