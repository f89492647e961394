package webhooks

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
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

	if n := d.round(); n != 0 || cs.updates.Load() != 0 {
		t.Fatalf("round over an empty outbox: sent %d, %d write transactions; want 0, 0", n, cs.updates.Load())
	}
	// An activity of an organization without endpoints writes nothing to the outbox.
	if err := st.Update(ctx, func(tx store.Tx) error {
		return Enqueue(ctx, tx, &directory.Organization{ID: "quiet"}, clock, []byte(`{}`))
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
		return Enqueue(ctx, tx, org, clock.Add(time.Hour), []byte(`{}`))
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
