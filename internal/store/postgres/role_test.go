package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/store"
)

// TestRole: a writable primary is ready; one whose transactions are read-only (being demoted)
// is not; with RequireSyncStandby a primary without a synchronous standby refuses writes at
// once, with a 503, and says why.
func TestRole(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, Options{})
	r, err := s.Role(ctx)
	if err != nil || r.Role != "primary" || !r.Ready() {
		t.Fatalf("writable primary: %+v, %v", r, err)
	}

	url, schema := freshSchema(t)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := "lk_role_" + schema[len("lk_test_"):]
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN SUPERUSER"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE "+role) })
	ro, err := Open(ctx, strings.Replace(url, "postgres://postgres@", "postgres://"+role+"@", 1),
		Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := admin.Exec(ctx, "ALTER ROLE "+role+" SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	ro.pool.Reset() // new sessions take the role's new default
	r, err = ro.Role(ctx)
	if err != nil || r.Role != "read-only" || r.Ready() {
		t.Fatalf("read-only primary: %+v, %v", r, err)
	}

	sync := openFresh(t, Options{RequireSyncStandby: true})
	r, err = sync.Role(ctx)
	if err != nil || r.Ready() || r.Refused == "" || r.SyncStandbys != 0 {
		t.Fatalf("no synchronous standby, required: %+v, %v", r, err)
	}
	err = sync.Update(ctx, putRecord("x"))
	if !errors.Is(err, store.ErrNoSyncStandby) || apierr.From(err).Code != apierr.Unavailable {
		t.Fatalf("Update without a synchronous standby: %v", err)
	}
}
