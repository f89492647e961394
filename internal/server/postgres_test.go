package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// twoProcesses opens two Latchkey servers (two pools, as two processes have) over one fresh
// PostgreSQL schema, each with its own HTTP listener. It skips without
// LATCHKEY_TEST_DATABASE_URL.
func twoProcesses(t *testing.T) (a, b *servertest.Harness) {
	t.Helper()
	return twoProcessesWith(t, nil)
}

// twoProcessesWith is twoProcesses with each server's configuration adjusted by configure.
func twoProcessesWith(t *testing.T, configure func(*server.Config)) (a, b *servertest.Harness) {
	t.Helper()
	cfg := servertest.NewConfig(t)
	cfg.DatabaseURL = servertest.PostgresURL(t)
	if configure != nil {
		configure(&cfg)
	}
	return servertest.Start(t, cfg), servertest.Start(t, cfg)
}

// Two Latchkey processes over one PostgreSQL: concurrent approvals that each complete the
// consensus run the activity exactly once. Runs when LATCHKEY_TEST_DATABASE_URL is set.
func TestConcurrentApprovalsAcrossProcessesExecuteOnce(t *testing.T) {
	a, b := twoProcesses(t)
	root, created := a.RootOrg("Acme")
	var privs []string
	var ids []string
	for i := 0; i < 2; i++ {
		priv, pub := a.NewKey()
		u := root.Submit(
			"create_users",
			"ACTIVITY_TYPE_CREATE_USERS_V4",
			map[string]any{"users": []any{map[string]any{"userName": fmt.Sprintf("r%d", i), "apiKeys": []any{
				map[string]any{
					"apiKeyName": "k",
					"publicKey":  pub,
					"curveType":  "API_KEY_CURVE_P256",
				}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}},
		)
		servertest.MustOK(t, u)
		privs = append(privs, priv)
		ids = append(ids, u.Str("activity", "result", "createUsersResult", "userIds", "0"))
	}
	servertest.MustOK(
		t,
		root.Submit(
			"update_root_quorum",
			"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 2, "userIds": []string{created.UserID, ids[0], ids[1]}},
		),
	)
	for round := 0; round < 5; round++ {
		r := root.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": fmt.Sprintf("once-%d", round), "userIds": []string{}},
		)
		if r.Str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
			t.Fatalf("want CONSENSUS_NEEDED: %s", r.Raw)
		}
		fp := r.Str("activity", "fingerprint")
		var wg sync.WaitGroup
		results := make([]servertest.Response, 2)
		for i, h := range []*servertest.Harness{a, b} {
			wg.Add(1)
			go func(i int, h *servertest.Harness) {
				defer wg.Done()
				c := h.Client(created.OrganizationID, privs[i])
				results[i] = c.Submit(
					"approve_activity",
					"ACTIVITY_TYPE_APPROVE_ACTIVITY",
					map[string]any{"fingerprint": fp},
				)
			}(i, h)
		}
		wg.Wait()
		for _, res := range results {
			servertest.MustOK(t, res)
		}
		l := root.Query("list_user_tags", nil)
		n := 0
		for _, tag := range l.Body["userTags"].([]any) {
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
	root, created := a.RootOrg("Acme")
	priv := root.Priv
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
				servertest.MustOK(t, root.Submit(k.op, k.typ, k.params(fmt.Sprintf("pre-%d", i))))
			}
			var wg sync.WaitGroup
			results := make([]servertest.Response, 30)
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					h := []*servertest.Harness{a, b}[i%2]
					results[i] = h.Client(created.OrganizationID, priv).
						Submit(k.op, k.typ, k.params(fmt.Sprintf("race-%d", i)))
				}(i)
			}
			wg.Wait()
			ok, refused := 0, 0
			for _, r := range results {
				switch {
				case r.Status == 200 && r.Str("activity", "status") == "ACTIVITY_STATUS_COMPLETED":
					ok++
				case strings.Contains(string(r.Raw), "RESOURCE_EXHAUSTED") || strings.Contains(string(r.Raw), "at most 100"):
					refused++
				default:
					t.Errorf("unexpected answer %d: %s", r.Status, r.Raw)
				}
			}
			n := len(root.Query(k.list, nil).Body[k.member].([]any))
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
	if _, err := dashboard.CreateOperator(ctx, a.Server.Store, "ops@example.com", "correct horse battery", time.Now()); err != nil {
		t.Fatal(err)
	}
	da := httptest.NewServer(a.Server.Dashboard.Handler())
	db := httptest.NewServer(b.Server.Dashboard.Handler())
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

// An API key deleted through one process is refused by the other at once, and by the process
// that deleted it, though both served it from memory before (package hot).
func TestRevokedKeyRefusedByEveryProcess(t *testing.T) {
	a, b := twoProcesses(t)
	root, created := a.RootOrg("Acme")
	priv, pub := a.NewKey()
	r := root.Submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID,
		"apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}})
	servertest.MustOK(t, r)
	keyID := r.Str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	viaA, viaB := a.Client(created.OrganizationID, priv), b.Client(created.OrganizationID, priv)
	for _, c := range []*servertest.Client{viaA, viaB} {
		servedFromMemory(t, c)
	}
	servertest.MustOK(
		t,
		root.Submit(
			"delete_api_keys",
			"ACTIVITY_TYPE_DELETE_API_KEYS",
			map[string]any{"userId": created.UserID, "apiKeyIds": []string{keyID}},
		),
	)
	for name, c := range map[string]*servertest.Client{"the deleting process": viaA, "the other process": viaB} {
		if got := c.Query("whoami", nil); got.Status != http.StatusUnauthorized {
			t.Errorf("%s still accepts the deleted key: %d %s", name, got.Status, got.Raw)
		}
	}
}
