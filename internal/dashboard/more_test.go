package dashboard_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/store"
)

// TestSearchByAddressAndNoProxyKey: an organization is found by a wallet account's address (in
// any letter case), and the auth proxy's sealed private key appears on no page.
func TestSearchByAddressAndNoProxyKey(t *testing.T) {
	e := setup(t)
	res := e.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		`{"walletName":"treasury","accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}]}`,
	)
	addr := regexp.MustCompile(`0x[0-9a-fA-F]{40}`).FindString(res)
	if addr == "" {
		t.Fatalf("no address in %s", res)
	}
	cfg, err := e.s.Proxy.Enable(context.Background(), e.orgID, authproxy.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	var sealed []byte
	if err := e.s.Store.View(context.Background(), func(r store.Reader) error {
		rec, err := r.Get(context.Background(), authproxy.KindConfig, cfg.ID)
		if err != nil {
			return err
		}
		var raw struct {
			SealedProxyKey []byte `json:"sealedProxyKey"`
		}
		if err := json.Unmarshal(rec.Data, &raw); err != nil {
			return err
		}
		sealed = raw.SealedProxyKey
		return nil
	}); err != nil || len(sealed) == 0 {
		t.Fatalf("sealed proxy key: %v (%d bytes)", err, len(sealed))
	}
	secrets := []string{
		base64.StdEncoding.EncodeToString(sealed),
		base64.RawURLEncoding.EncodeToString(sealed),
		hex.EncodeToString(sealed),
	}

	b := e.browser()
	b.login(password)
	for _, q := range []string{addr, strings.ToLower(addr), "0x" + strings.ToUpper(addr[2:])} {
		code, body := b.get("/orgs?q=" + url.QueryEscape(q))
		if code != 200 || !strings.Contains(body, "Acme Corp") {
			t.Fatalf("search by address %s: %d", q, code)
		}
	}
	for _, p := range []string{"/", "/orgs", "/orgs/" + e.orgID, "/orgs/" + e.orgID + "/activities", "/orgs/" + e.orgID + "/proxy", "/keys", "/health", "/audit"} {
		_, body := b.get(p)
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s shows the sealed proxy key", p)
			}
		}
	}
}

// TestSignInLimitPerAddressSignOutAndTLS: failed sign-ins for different e-mails from one address
// exhaust that address; signing out ends the session; under TLS the cookie is Secure.
func TestSignInLimitPerAddressSignOutAndTLS(t *testing.T) {
	e := setup(t)
	b := e.browser()
	for i := 0; i < dashboard.DefaultMaxFailuresPerAddress; i++ {
		b.post("/login", url.Values{"email": {fmt.Sprintf("nobody%d@example.com", i)}, "password": {"x"}})
	}
	if r := b.login(password); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf(
			"after %d failures from one address a sign-in answered %d",
			dashboard.DefaultMaxFailuresPerAddress,
			r.StatusCode,
		)
	}

	e2 := setup(t)
	b2 := e2.browser()
	if r := b2.login(password); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", r.StatusCode)
	}
	_, page := b2.get("/")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no sign-out form with a CSRF token on the overview")
	}
	if r, _ := b2.post("/logout", url.Values{"csrf": {m[1]}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", r.StatusCode)
	}
	if code, _ := b2.get("/"); code != http.StatusSeeOther {
		t.Fatalf("after sign-out a page answered %d", code)
	}
	b2.login(password)
	if _, body := b2.get("/audit"); !strings.Contains(body, "operator created") || !strings.Contains(body, "sign-out") {
		t.Fatal("the operator's creation or sign-out is not in the audit log")
	}

	ts := httptest.NewTLSServer(e2.s.Dashboard.Handler())
	defer ts.Close()
	c := ts.Client()
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.PostForm(ts.URL+"/login", url.Values{"email": {"ops@example.com"}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var secure bool
	for _, ck := range resp.Cookies() {
		secure = ck.Secure && ck.HttpOnly && ck.SameSite == http.SameSiteStrictMode
	}
	if resp.StatusCode != http.StatusSeeOther || !secure {
		t.Fatalf("TLS sign-in %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}

// TestAuditPaginates: the audit log shows a page of 50 newest first, and "Older" continues.
func TestAuditPaginates(t *testing.T) {
	e := setup(t)
	b := e.browser()
	for i := 0; i < 55; i++ { // 55 sign-ins, plus the operator's creation: 56 records
		if r := b.login(password); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in %d: %d", i, r.StatusCode)
		}
	}
	_, page := b.get("/audit")
	next := regexp.MustCompile(`href="/audit\?after=([0-9a-f-]+)"`).FindStringSubmatch(page)
	if n := strings.Count(page, "<tr><td>"); n != 50 || next == nil {
		t.Fatalf("first page: %d rows, next %v", n, next)
	}
	_, page2 := b.get("/audit?after=" + next[1])
	if n := strings.Count(page2, "<tr><td>"); n != 6 || strings.Contains(page2, "/audit?after=") ||
		!strings.Contains(page+page2, "operator created") {
		t.Fatalf("second page: %d rows", n)
	}
}
