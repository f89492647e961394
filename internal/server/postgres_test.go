package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/id"
)

// Two Latchkey processes over one PostgreSQL: concurrent approvals that each complete the
// consensus run the activity exactly once. Runs when LATCHKEY_TEST_DATABASE_URL is set.
func TestConcurrentApprovalsAcrossProcessesExecuteOnce(t *testing.T) {
	url := os.Getenv("LATCHKEY_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("LATCHKEY_TEST_DATABASE_URL not set")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("PostgreSQL unreachable: %v", err)
	}
	schema := "lk_srv_" + strings.ReplaceAll(id.New(), "-", "")[:16]
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	dbURL := url + sep + "search_path=" + schema
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	var servers []*harness
	for i := 0; i < 2; i++ {
		s, err := Open(ctx, Config{DataDir: dir, DatabaseURL: dbURL, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, s: s, now: time.Now().UTC()}
		srv := httptest.NewServer(s.API.Handler())
		t.Cleanup(func() { srv.Close(); s.Close() })
		h.url = srv.URL
		servers = append(servers, h)
	}
	a, b := servers[0], servers[1]
	root, created := a.rootOrg("Acme")
	var privs []string
	var ids []string
	for i := 0; i < 2; i++ {
		priv, pub := a.newKey()
		u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": fmt.Sprintf("r%d", i), "apiKeys": []any{
			map[string]any{"apiKeyName": "k", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
		mustOK(t, u)
		privs = append(privs, priv)
		ids = append(ids, u.str("activity", "result", "createUsersResult", "userIds", "0"))
	}
	mustOK(t, root.submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 2, "userIds": []string{created.UserID, ids[0], ids[1]}}))
	for round := 0; round < 5; round++ {
		r := root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": fmt.Sprintf("once-%d", round), "userIds": []string{}})
		if r.str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
			t.Fatalf("want CONSENSUS_NEEDED: %s", r.raw)
		}
		fp := r.str("activity", "fingerprint")
		var wg sync.WaitGroup
		results := make([]response, 2)
		for i, h := range []*harness{a, b} {
			wg.Add(1)
			go func(i int, h *harness) {
				defer wg.Done()
				c := h.client(created.OrganizationID, privs[i])
				results[i] = c.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
			}(i, h)
		}
		wg.Wait()
		for _, res := range results {
			mustOK(t, res)
		}
		l := root.query("list_user_tags", nil)
		n := 0
		for _, tag := range l.body["userTags"].([]any) {
			if tag.(map[string]any)["tagName"] == fmt.Sprintf("once-%d", round) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: the activity ran %d times", round, n)
		}
	}
}
