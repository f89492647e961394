package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// syncCommitWaits tells whether a synchronous commit on url waits (for a standby that is not
// there) rather than returning.
func syncCommitWaits(t *testing.T, url string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS lk_probe (x int); INSERT INTO lk_probe VALUES (1)")
	if err != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal(err)
	}
	return err != nil
}

// setSyncStandby names the synchronous standby the server on url waits for ("" none) and
// returns once its commits do as told.
func setSyncStandby(t *testing.T, url, name string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+name+"'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	for i := 0; syncCommitWaits(t, url) != (name != ""); i++ {
		if i == 100 {
			t.Fatalf("synchronous_standby_names = %q never took effect", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestResendWaitsForReplication: the same bytes sent again are answered from the activity they
// made only once everything the server committed is on its synchronous standbys: a row that
// reached only a primary which crashed and came back (here: a primary whose standby is away)
// is never acknowledged. Until then the answer is a 503 that says to try again.
func TestResendWaitsForReplication(t *testing.T) {
	url := storetest.PrivateCluster(t)
	cfg := servertest.NewConfig(t)
	cfg.DatabaseURL = url
	cfg.StoreRetryFor = time.Second
	h := servertest.Start(t, cfg)
	root, _ := h.RootOrg("Resend")
	body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "t", "userIds": []string{}})
	first := root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, first)

	setSyncStandby(t, url, "absent_standby")
	again := root.Post("/public/v1/submit/create_user_tag", body)
	servertest.WantError(t, again, http.StatusServiceUnavailable, 14, "")

	setSyncStandby(t, url, "")
	again = root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, again)
	if again.Str("activity", "id") != first.Str("activity", "id") {
		t.Fatalf("the resend made another activity:\n%s\n%s", first.Raw, again.Raw)
	}
}
