package webhooks

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// TestLeaseTimedByDatabaseClock: a delivery leased by one process (until the database's clock
// says its lease ends) is not taken over by another process whose clock is an hour ahead.
func TestLeaseTimedByDatabaseClock(t *testing.T) {
	url, schema := storetest.PostgresSchema(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC() // the database runs on this machine: its clock reads the same
	dl := &Delivery{ID: "d1", OrgID: "org", EndpointID: "e1", URL: "https://hooks.example/x",
		Body: []byte(`{}`), Attempts: 1, LeaseUntil: now.Add(30 * time.Second), CreatedAt: now}
	if err := st.Update(ctx, func(tx store.Tx) error {
		return records.Save(ctx, tx, KindDelivery, dl.ID, outboxOwner, now, now, dl)
	}); err != nil {
		t.Fatal(err)
	}
	ahead := &Deliverer{Store: hot.Wrap(st, hot.NewVersions()), // as served: its Tx wraps the driver's
		Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return time.Now().UTC().Add(time.Hour) }}
	ahead.Prepare()
	if n := ahead.round(); n != 0 {
		t.Fatalf("a process whose clock is ahead took over a leased delivery (sent %d)", n)
	}
	var got *Delivery
	if err := st.View(ctx, func(r store.Reader) (err error) {
		got, err = records.Load[Delivery](ctx, r, KindDelivery, outboxOwner, dl.ID, "delivery")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 1 || !got.LeaseUntil.Equal(dl.LeaseUntil) {
		t.Fatalf("the delivery was leased again: attempts %d, lease until %v", got.Attempts, got.LeaseUntil)
	}
}
