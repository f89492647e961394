package messages

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

// TestClaimTimedByDatabaseClock: a message claimed by one process (until the database's clock
// says the claim ends) is not claimed again by a process whose clock is an hour ahead, and one
// due by the database's clock is claimed by a process whose clock is an hour behind.
func TestClaimTimedByDatabaseClock(t *testing.T) {
	url, schema := storetest.PostgresSchema(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC() // the database runs on this machine: its clock reads the same
	claimed := queued{ID: "m1", Channel: "email", Attempts: 1, ClaimedUntil: now.Add(claimFor), CreatedAt: now}
	due := queued{ID: "m2", Channel: "email", NextAt: now.Add(-time.Second), CreatedAt: now}
	if err := st.Update(ctx, func(tx store.Tx) error {
		if err := records.Save(ctx, tx, KindMessage, claimed.ID, "", now, now, claimed); err != nil {
			return err
		}
		return records.Save(ctx, tx, KindMessage, due.ID, "", now, now, due)
	}); err != nil {
		t.Fatal(err)
	}
	skewed := func(d time.Duration) *Outbox {
		return &Outbox{Store: hot.Wrap(st, hot.NewVersions()), // as served: its Tx wraps the driver's
			Log: slog.New(slog.DiscardHandler),
			Now: func() time.Time { return time.Now().UTC().Add(d) }}
	}
	q, err := skewed(time.Hour).claim(ctx, claimed.ID, false)
	if err != nil || q != nil {
		t.Fatalf("a process an hour ahead claimed a claimed message: %v, %v", q, err)
	}
	q, err = skewed(-time.Hour).claim(ctx, due.ID, false)
	if err != nil || q == nil {
		t.Fatalf("a process an hour behind did not claim a due message: %v, %v", q, err)
	}
}
