package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

const password = "correct horse battery"

type env struct {
	t      *testing.T
	s      *server.Server
	dash   *httptest.Server
	api    *httptest.Server
	orgID  string
	priv   string
	outbox *notify.Outbox
	now    time.Time
}

func setup(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	out, _ := notify.NewOutbox(filepath.Join(dir, "outbox.jsonl"))
	s, err := server.Open(
		context.Background(),
		server.Config{DataDir: dir, MasterKeyFile: mk, Emailer: out, Texter: out,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
	)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, s: s, outbox: out, now: time.Now().UTC()}
	s.Dashboard.Now = func() time.Time { return e.now }
	e.dash = httptest.NewServer(s.Dashboard.Handler())
	e.api = httptest.NewServer(s.API.Handler())
	t.Cleanup(func() { e.dash.Close(); e.api.Close(); s.Close() })
	if _, err := dashboard.CreateOperator(context.Background(), s.Store, "ops@example.com", password, time.Now()); err != nil {
		t.Fatal(err)
	}
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	c, err := s.CreateOrganization(
		context.Background(),
		server.OrgSpec{OrgName: "Acme Corp", UserName: "alice", UserEmail: "alice@acme.example", APIPublicKey: pub},
	)
	if err != nil {
		t.Fatal(err)
	}
	e.orgID, e.priv = c.OrganizationID, priv
	return e
}

// submit sends a stamped activity to the API.
func (e *env) submit(op, typ, params string) string {
	body := fmt.Sprintf(
		`{"type":%q,"timestampMs":"%d","organizationId":%q,"parameters":%s}`,
		typ,
		time.Now().UnixMilli(),
		e.orgID,
		params,
	)
	st, _ := stamp.NewP256Stamper(e.priv)
	name, value, _ := st.Stamp([]byte(body))
	req, _ := http.NewRequest(http.MethodPost, e.api.URL+"/public/v1/submit/"+op, strings.NewReader(body))
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("%s: %s", op, b)
	}
	return string(b)
}

type browser struct {
	t *testing.T
	c *http.Client
	u string
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{
		t: e.t,
		c: &http.Client{
			Jar:           jar,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		u: e.dash.URL,
	}
}

func (b *browser) get(path string) (int, string) {
	resp, err := b.c.Get(b.u + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	resp, err := b.c.PostForm(b.u+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func (b *browser) login(pw string) *http.Response {
	resp, _ := b.post("/login", url.Values{"email": {"ops@example.com"}, "password": {pw}})
	return resp
}

func TestSignInAndRefusals(t *testing.T) {
	e := setup(t)
	b := e.browser()
	if code, _ := b.get("/"); code != http.StatusSeeOther {
		t.Fatalf("an anonymous page answered %d", code)
	}
	if r := b.login("wrong password!!"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", r.StatusCode)
	}
	r := b.login(password)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", r.StatusCode)
	}
	var ck *http.Cookie
	for _, c := range r.Cookies() {
		ck = c
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", ck)
	}
	code, page := b.get("/orgs/" + e.orgID + "/proxy")
	if code != 200 {
		t.Fatalf("proxy page: %d %s", code, page)
	}
	csrf := csrfField.FindStringSubmatch(page)[1]
	// A form without (or with a wrong) CSRF token is refused and changes nothing.
	wrong := "0" // csrf with its first digit changed ("00"+csrf[2:] was the right token 1 time in 256)
	if csrf[0] == '0' {
		wrong = "1"
	}
	for _, tok := range []string{"", wrong + csrf[1:]} {
		resp, _ := b.post(
			"/orgs/"+e.orgID+"/proxy",
			url.Values{"csrf": {tok}, "enabled": {"on"}, "sessionExpirationSeconds": {"900"}, "otpLength": {"6"}},
		)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("csrf %q: %d", tok, resp.StatusCode)
		}
	}
	if _, err := e.s.Proxy.Get(context.Background(), e.orgID); err == nil {
		t.Fatal("a refused form enabled the proxy")
	}
	// An expired session is refused.
	e.now = e.now.Add(13 * time.Hour)
	if code, _ := b.get("/"); code != http.StatusSeeOther {
		t.Fatalf("expired session answered %d", code)
	}
	// Sign-ins are rate limited.
	b2 := e.browser()
	for i := 0; i < 5; i++ {
		b2.login("wrong password!!")
	}
	if r := b2.login(password); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after 5 failures a sign-in answered %d", r.StatusCode)
	}
}

// TestPagesShowNoSecrets renders every page over real data (a wallet, a private key, a one-time
// code, the auth proxy) and checks each for the secrets Latchkey holds.
func TestPagesShowNoSecrets(t *testing.T) {
	e := setup(t)
	e.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		`{"walletName":"treasury","accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}]}`,
	)
	e.submit(
		"create_private_keys",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2",
		`{"privateKeys":[{"privateKeyName":"hot","curve":"CURVE_ED25519","privateKeyTags":[],"addressFormats":["ADDRESS_FORMAT_SOLANA"]}]}`,
	)
	act := e.submit(
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		`{"otpType":"OTP_TYPE_EMAIL","contact":"alice@acme.example","appName":"Acme"}`,
	)
	es, _ := notify.ReadOutbox(e.outbox.Path())
	code := regexp.MustCompile(`(?m)^    (\S+)\s*$`).FindStringSubmatch(es[0].Email.Text)[1]
	if _, err := e.s.Proxy.Enable(context.Background(), e.orgID, authproxy.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	actID := regexp.MustCompile(`"id":"([0-9a-f-]{36})"`).FindStringSubmatch(act)[1]

	b := e.browser()
	b.login(password)
	pages := []string{
		"/",
		"/orgs",
		"/orgs?parent=" + e.orgID,
		"/orgs?q=alice@acme.example",
		"/orgs/" + e.orgID,
		"/orgs/" + e.orgID + "/activities",
		"/activities/" + actID,
		"/orgs/" + e.orgID + "/proxy",
		"/keys",
		"/health",
		"/audit",
		"/charts",
		"/charts?org=" + e.orgID,
		"/failed",
		"/audit/export?format=csv",
		"/audit/export?format=json",
	}
	for _, p := range pages {
		status, body := b.get(p)
		if status != 200 {
			t.Fatalf("%s: %d %s", p, status, body)
		}
		for _, secret := range []string{code, e.priv, "sealed", "Sealed", "mnemonic"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q", p, secret)
			}
		}
	}
	if _, body := b.get("/keys"); !regexp.MustCompile(`<td>1 <span class="st completed">active</span></td><td>[^<]+</td><td>([1-9][0-9]*)</td>`).
		MatchString(body) ||
		!strings.Contains(body, e.s.Keyring.MasterID()) {
		t.Fatalf("the keys page lacks the keyring's versions and counts: %s", body)
	}
	if _, body := b.get("/orgs?q=alice@acme.example"); !strings.Contains(body, "Acme Corp") {
		t.Fatal("search by user e-mail did not find the organization")
	}
	if _, body := b.get("/orgs/" + e.orgID); !strings.Contains(body, "treasury") || !strings.Contains(body, "0x") {
		t.Fatal("the organization page lacks the wallet")
	}
	if _, body := b.get("/activities/" + actID); !strings.Contains(body, "INIT_OTP") {
		t.Fatal("the activity page lacks the activity")
	}
	if code, _ := b.get("/orgs/00000000-0000-4000-8000-000000000000"); code != 404 {
		t.Fatalf("unknown org: %d", code)
	}
}

// TestProxySettingsFromTheDashboard: the settings form changes the running proxy's
// configuration and is audited; invalid values are refused naming the field.
func TestProxySettingsFromTheDashboard(t *testing.T) {
	e := setup(t)
	b := e.browser()
	b.login(password)
	_, page := b.get("/orgs/" + e.orgID + "/proxy")
	csrf := csrfField.FindStringSubmatch(page)[1]
	form := url.Values{
		"csrf":           {csrf},
		"action":         {"save"},
		"enabled":        {"on"},
		"allowedOrigins": {"https://app.acme.example\nhttps://admin.acme.example"},
		"sessionExpirationSeconds": {
			"3600",
		},
		"otpLength":      {"8"},
		"providers":      {"email", "google"},
		"emailAppName":   {"Acme Wallet"},
		"oauthClientIds": {"google=acme-google"},
		"smsTemplate":    {"Your Acme code: {{.OtpCode}}"},
	}
	resp, _ := b.post("/orgs/"+e.orgID+"/proxy", form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("save: %d", resp.StatusCode)
	}
	c, err := e.s.Proxy.Get(context.Background(), e.orgID)
	if err != nil || !c.Settings.Enabled || c.Settings.SessionExpirationSeconds != 3600 ||
		len(c.Settings.AllowedOrigins) != 2 ||
		c.Settings.OTPLength != 8 ||
		c.Settings.OAuthClientIDs["google"] != "acme-google" {
		t.Fatalf("settings %+v, %v", c, err)
	}
	_, page = b.get("/orgs/" + e.orgID + "/proxy")
	if !strings.Contains(page, "Your Acme code: 77777777") || !strings.Contains(page, "Acme Wallet") {
		t.Fatal("the message preview does not show the settings")
	}
	form.Set("sessionExpirationSeconds", "5")
	resp, body := b.post("/orgs/"+e.orgID+"/proxy", form)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "sessionExpirationSeconds") {
		t.Fatalf("invalid value: %d", resp.StatusCode)
	}
	if _, body := b.get("/audit"); !strings.Contains(body, "auth proxy settings") ||
		!strings.Contains(body, "ops@example.com") {
		t.Fatal("the change is not in the audit log")
	}
}
