package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/id"
)

// Two Latchkey processes over one PostgreSQL: concurrent approvals that each complete the
// consensus run the activity exactly once. Runs when LATCHKEY_TEST_DATABASE_URL is set.
// twoProcesses opens two Latchkey servers (two pools, as two processes have) over one fresh
// PostgreSQL schema, each with its own HTTP listener. It skips without
// LATCHKEY_TEST_DATABASE_URL.
func twoProcesses(t *testing.T) (a, b *harness) {
	t.Helper()
	return twoProcessesWith(t, nil)
}

// twoProcessesWith is twoProcesses with each server's configuration adjusted by configure.
func twoProcessesWith(t *testing.T, configure func(*Config)) (a, b *harness) {
	t.Helper()
	url := os.Getenv("LATCHKEY_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("LATCHKEY_TEST_DATABASE_URL not set: set it to a PostgreSQL URL to run the two-process tests")
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
		cfg := Config{DataDir: dir, DatabaseURL: dbURL, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if configure != nil {
			configure(&cfg)
		}
		s, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, s: s, now: time.Now().UTC()}
		srv := httptest.NewServer(s.API.Handler())
		t.Cleanup(func() { srv.Close(); s.Close() })
		h.url = srv.URL
		servers = append(servers, h)
	}
	return servers[0], servers[1]
}

// Two Latchkey processes over one PostgreSQL: concurrent approvals that each complete the
// consensus run the activity exactly once. Runs when LATCHKEY_TEST_DATABASE_URL is set.
func TestConcurrentApprovalsAcrossProcessesExecuteOnce(t *testing.T) {
	a, b := twoProcesses(t)
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

// Per-organization limits hold under concurrency across two processes over one PostgreSQL:
// with 95 user tags and 95 wallets, 30 concurrent creations of each (half through each
// process) end at exactly 100 (the limit), the rest refused with RESOURCE_EXHAUSTED.
func TestLimitsHoldAcrossProcesses(t *testing.T) {
	a, b := twoProcesses(t)
	root, created := a.rootOrg("Acme")
	priv := root.priv
	kinds := []struct {
		op, typ, list, member string
		params                func(name string) map[string]any
	}{
		{"create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", "list_user_tags", "userTags",
			func(name string) map[string]any { return map[string]any{"userTagName": name, "userIds": []string{}} }},
		{"create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", "list_wallets", "wallets",
			func(name string) map[string]any { return map[string]any{"walletName": name, "accounts": []any{}} }},
	}
	for _, k := range kinds {
		t.Run(k.op, func(t *testing.T) {
			for i := 0; i < 95; i++ {
				mustOK(t, root.submit(k.op, k.typ, k.params(fmt.Sprintf("pre-%d", i))))
			}
			var wg sync.WaitGroup
			results := make([]response, 30)
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					h := []*harness{a, b}[i%2]
					results[i] = h.client(created.OrganizationID, priv).submit(k.op, k.typ, k.params(fmt.Sprintf("race-%d", i)))
				}(i)
			}
			wg.Wait()
			ok, refused := 0, 0
			for _, r := range results {
				switch {
				case r.status == 200 && r.str("activity", "status") == "ACTIVITY_STATUS_COMPLETED":
					ok++
				case strings.Contains(string(r.raw), "RESOURCE_EXHAUSTED") || strings.Contains(string(r.raw), "at most 100"):
					refused++
				default:
					t.Errorf("unexpected answer %d: %s", r.status, r.raw)
				}
			}
			n := len(root.query(k.list, nil).body[k.member].([]any))
			if n != 100 || ok != 5 || refused != 25 {
				t.Fatalf("%s: %d records, %d created, %d refused; want exactly 100, 5, 25", k.op, n, ok, refused)
			}
		})
	}
}

// Dashboard sessions and sign-in failures live in the store: through two processes over one
// PostgreSQL, a session made at one is honoured by the other, signing out at either ends it,
// and failed sign-ins at both count together.
func TestDashboardSessionsAcrossProcesses(t *testing.T) {
	a, b := twoProcesses(t)
	ctx := context.Background()
	if _, err := dashboard.CreateOperator(ctx, a.s.Store, "ops@example.com", "correct horse battery", time.Now()); err != nil {
		t.Fatal(err)
	}
	da := httptest.NewServer(a.s.Dashboard.Handler())
	db := httptest.NewServer(b.s.Dashboard.Handler())
	t.Cleanup(func() { da.Close(); db.Close() })
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &http.Client{CheckRedirect: noRedirect}
	login := func(base, pw string) *http.Response {
		resp, err := c.PostForm(base+"/login", url.Values{"email": {"ops@example.com"}, "password": {pw}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := login(da.URL, "correct horse battery")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("sign-in at A: %d", resp.StatusCode)
	}
	cookie := resp.Cookies()[0]
	page := func(base string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.AddCookie(cookie)
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(body)
	}
	code, body := page(db.URL)
	if code != http.StatusOK {
		t.Fatalf("A's session at B: %d", code)
	}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token at B")
	}
	req, _ := http.NewRequest(http.MethodPost, db.URL+"/logout", strings.NewReader(url.Values{"csrf": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out at B: %v %v", r, err)
	}
	if code, _ := page(da.URL); code != http.StatusSeeOther {
		t.Fatalf("signed out at B, the session lives on at A: %d", code)
	}
	for i := 0; i < dashboard.DefaultMaxFailuresPerEmail; i++ {
		login([]string{da.URL, db.URL}[i%2], "wrong password!")
	}
	if r := login(da.URL, "correct horse battery"); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("failures at A and B were not counted together: %d", r.StatusCode)
	}
}

// An API key deleted through one process is refused by the other at once (it holds no copy of
// the credential to go stale), and by the process that deleted it: the guarantee a cache of
// callers must keep (docs/performance.md).
func TestRevokedKeyRefusedByEveryProcess(t *testing.T) {
	a, b := twoProcesses(t)
	root, created := a.rootOrg("Acme")
	priv, pub := a.newKey()
	r := root.submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID,
		"apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}})
	mustOK(t, r)
	keyID := r.str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	viaA, viaB := a.client(created.OrganizationID, priv), b.client(created.OrganizationID, priv)
	// Both processes have served the key (and would have cached it, if they cached).
	mustOK(t, viaA.query("whoami", nil))
	mustOK(t, viaB.query("whoami", nil))
	mustOK(t, root.submit("delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS", map[string]any{"userId": created.UserID, "apiKeyIds": []string{keyID}}))
	for name, c := range map[string]*client{"the deleting process": viaA, "the other process": viaB} {
		if got := c.query("whoami", nil); got.status != http.StatusUnauthorized {
			t.Errorf("%s still accepts the deleted key: %d %s", name, got.status, got.raw)
		}
	}
}
