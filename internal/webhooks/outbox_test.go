package webhooks

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/hot/hottest"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// countingStore counts write transactions.
type countingStore struct {
	store.Store
	updates atomic.Int64
}

func (s *countingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	s.updates.Add(1)
	return s.Store.Update(ctx, fn)
}

// TestEmptyOutboxCostsNoWrite: activities of organizations without endpoints do not wake the
// deliverer, and a round over an empty outbox takes no write transaction (on SQLite, a job of
// the one writer every activity waits for); a delivery written wakes it and is leased in one.
func TestEmptyOutboxCostsNoWrite(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingStore{Store: st}
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	d := &Deliverer{Store: cs, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return clock }}
	d.Prepare()
	enqueue := Enqueuer(NewParents(hot.NewVersions()))

	if n := d.round(); n != 0 || cs.updates.Load() != 0 {
		t.Fatalf("round over an empty outbox: sent %d, %d write transactions; want 0, 0", n, cs.updates.Load())
	}
	// An activity of an organization without endpoints writes nothing to the outbox.
	if err := st.Update(ctx, func(tx store.Tx) error {
		return enqueue(ctx, tx, &directory.Organization{ID: "quiet"}, clock, []byte(`{}`))
	}); err != nil {
		t.Fatal(err)
	}
	d.Wake()
	if len(d.wake) != 0 {
		t.Fatal("Wake with nothing enqueued woke the deliverer")
	}

	// An organization with an endpoint: its activity writes a delivery (due in an hour).
	org := &directory.Organization{ID: "org", WebhookEndpoints: 1}
	e := &Endpoint{ID: "e1", OrgID: org.ID, URL: "https://hooks.example/x", Active: true,
		Events: []string{EventActivityUpdates}}
	if err := st.Update(ctx, func(tx store.Tx) error {
		if err := records.Save(ctx, tx, KindEndpoint, e.ID, org.ID, clock, clock, e); err != nil {
			return err
		}
		return enqueue(ctx, tx, org, clock.Add(time.Hour), []byte(`{}`))
	}); err != nil {
		t.Fatal(err)
	}
	d.Wake()
	if len(d.wake) != 1 {
		t.Fatal("Wake after a delivery was written did not wake the deliverer")
	}
	if n := d.round(); n != 0 || cs.updates.Load() != 1 {
		t.Fatalf("round with a delivery not yet due: sent %d, %d write transactions; want 0, 1", n, cs.updates.Load())
	}
	// Looked at: no new wake until another delivery is written.
	<-d.wake
	d.Wake()
	if len(d.wake) != 0 {
		t.Fatal("Wake woke the deliverer again with nothing new enqueued")
	}
}

// gets counts the records read through a transaction.
type gets struct {
	store.Tx
	n int
}

func (g *gets) Get(ctx context.Context, kind, id string) (store.Record, error) {
	g.n++
	return g.Tx.Get(ctx, kind, id)
}

// TestSubOrganizationParentFromMemory: a sub-organization's activity is delivered to its
// parent's endpoints; on SQLite the parent is read from memory while it is unchanged, and from
// the store once it changed (here, its last endpoint gone).
func TestSubOrganizationParentFromMemory(t *testing.T) {
	ctx := context.Background()
	st, v := hottest.SQLite(t, directory.KindOrganization)
	enqueue := Enqueuer(NewParents(v))
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	parent := &directory.Organization{ID: "parent", WebhookEndpoints: 1, CreatedAt: clock, UpdatedAt: clock}
	sub := &directory.Organization{ID: "sub", ParentID: parent.ID, CreatedAt: clock, UpdatedAt: clock}
	e := &Endpoint{ID: "e1", OrgID: parent.ID, URL: "https://hooks.example/x", Active: true,
		Events: []string{EventActivityUpdates}}
	if err := st.Update(ctx, func(tx store.Tx) error {
		if err := directory.SaveOrganization(ctx, tx, parent); err != nil {
			return err
		}
		if err := directory.SaveOrganization(ctx, tx, sub); err != nil {
			return err
		}
		return records.Save(ctx, tx, KindEndpoint, e.ID, parent.ID, clock, clock, e)
	}); err != nil {
		t.Fatal(err)
	}
	// activity enqueues one activity of sub and returns the organization reads it made and
	// the deliveries now waiting.
	activity := func() (int, int) {
		t.Helper()
		g := &gets{}
		if err := st.Update(ctx, func(tx store.Tx) error {
			g.Tx, g.n = tx, 0
			return enqueue(ctx, g, sub, clock, []byte(`{}`))
		}); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.View(ctx, func(r store.Reader) (err error) {
			n, err = r.Count(ctx, KindDelivery, outboxOwner, 0)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return g.n, n
	}
	if reads, n := activity(); reads != 1 || n != 1 {
		t.Fatalf("first activity: %d parent reads, %d deliveries; want 1, 1", reads, n)
	}
	if reads, n := activity(); reads != 0 || n != 2 {
		t.Fatalf("second activity: %d parent reads, %d deliveries; want 0 (from memory), 2", reads, n)
	}
	parent.WebhookEndpoints = 0
	if err := st.Update(ctx, func(tx store.Tx) error { return directory.SaveOrganization(ctx, tx, parent) }); err != nil {
		t.Fatal(err)
	}
	if reads, n := activity(); reads != 1 || n != 2 {
		t.Fatalf("after the parent changed: %d parent reads, %d deliveries; want 1, still 2", reads, n)
	}
}
