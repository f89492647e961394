package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
	"github.com/latchkey/latchkey/internal/store"
)

// lockedBuffer is a log sink tests can read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// proxyHarness is the server harness with its auth proxy behind httptest, an organization
// with the proxy enabled, and one-time codes delivered to an outbox.
type proxyHarness struct {
	*servertest.Harness
	out   *notify.Outbox
	logs  *lockedBuffer
	purl  string
	root  *servertest.Client
	Org   server.Created
	cfgID string
}

// newProxyHarness opens the harness with opts after its own configuration (outbox, logs).
func newProxyHarness(t *testing.T, s authproxy.Settings, opts ...servertest.Option) *proxyHarness {
	t.Helper()
	out, err := notify.NewOutbox(filepath.Join(t.TempDir(), "outbox.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	h := servertest.New(t, append([]servertest.Option{servertest.WithConfig(func(c *server.Config) {
		c.Emailer, c.Texter = out, out
		c.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})}, opts...)...)
	h.Server.ProxyServer.Now = h.Now
	ps := httptest.NewServer(h.Server.ProxyServer.Handler())
	t.Cleanup(ps.Close)
	root, created := h.RootOrg("Acme")
	cfg, err := h.Server.Proxy.Enable(context.Background(), created.OrganizationID, s)
	if err != nil {
		t.Fatal(err)
	}
	return &proxyHarness{Harness: h, out: out, logs: logs, purl: ps.URL, root: root, Org: created, cfgID: cfg.ID}
}

// call posts body to the proxy's /v1/<op> with the config id and origin.
func (p *proxyHarness) call(op string, body any, headers map[string]string) servertest.Response {
	p.T.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		raw, _ = json.Marshal(b)
	}
	req, _ := http.NewRequest(http.MethodPost, p.purl+"/v1/"+op, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Proxy-Config-ID", p.cfgID)
	req.Header.Set("Origin", "https://app.example")
	// Removals first, then additions, each exactly as spelled (a header name in another case is
	// sent as written), whatever the map's order.
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		}
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Del(k)
			req.Header[k] = []string{v}
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := servertest.Response{Status: resp.StatusCode, Raw: b}
	_ = json.Unmarshal(b, &r.Body)
	p.Advance(time.Millisecond)
	return r
}

func (p *proxyHarness) ok(op string, body any) servertest.Response {
	p.T.Helper()
	r := p.call(op, body, nil)
	if r.Status != http.StatusOK {
		p.T.Fatalf("%s: %d %s", op, r.Status, r.Raw)
	}
	return r
}

// lastCode reads the newest one-time code from the outbox.
func (p *proxyHarness) lastCode(to string) string {
	p.T.Helper()
	es, err := notify.ReadOutbox(p.out.Path())
	if err != nil || len(es) == 0 {
		p.T.Fatalf("outbox: %v", err)
	}
	e := es[len(es)-1]
	if e.Email == nil || e.Email.To != to {
		p.T.Fatalf("last message: %+v", e)
	}
	m := otpCodeLine.FindStringSubmatch(e.Email.Text)
	if m == nil {
		p.T.Fatalf("no code in %q", e.Email.Text)
	}
	return m[1]
}

func p256Key(t *testing.T) (*ecdsa.PrivateKey, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := k.PublicKey.Bytes()
	return k, hex.EncodeToString(custody.P256Compressed(u))
}

func signRaw(t *testing.T, k *ecdsa.PrivateKey, msg []byte) string {
	d := sha256.Sum256(msg)
	r, s, err := ecdsa.Sign(rand.Reader, k, d[:])
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 64)
	r.FillBytes(raw[:32])
	s.FillBytes(raw[32:])
	return hex.EncodeToString(raw)
}

func signDER(t *testing.T, k *ecdsa.PrivateKey, msg []byte) string {
	d := sha256.Sum256(msg)
	sig, err := ecdsa.SignASN1(rand.Reader, k, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(sig)
}

func proxySettings() authproxy.Settings {
	s := authproxy.DefaultSettings()
	s.AllowedOrigins = []string{"https://app.example"}
	s.EnabledProviders = []string{"email", "passkey", "google"}
	s.OAuthClientIDs = map[string]string{"google": "google-client-id"}
	s.SessionExpirationSeconds = 1200
	s.OTPLength = 8
	s.Email.AppName = "Acme Wallet"
	return s
}

// TestProxyRefusals: each configuration and origin problem has its own status and code, the
// header is read in any case, preflights are answered, and changes apply without a restart.
func TestProxyRefusals(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	code := func(r servertest.Response) string { return r.Str("details", "0", "turnkeyErrorCode") }
	cases := []struct {
		name    string
		headers map[string]string
		status  int
		code    string
	}{
		{"no config id", map[string]string{"X-Auth-Proxy-Config-ID": ""}, 400, "AUTH_PROXY_CONFIG_ID_MISSING"},
		{
			"malformed config id",
			map[string]string{"X-Auth-Proxy-Config-ID": "not-a-uuid"},
			404,
			"AUTH_PROXY_CONFIG_NOT_FOUND",
		},
		{
			"unknown config id",
			map[string]string{"X-Auth-Proxy-Config-ID": "00000000-0000-4000-8000-000000000000"},
			404,
			"AUTH_PROXY_CONFIG_NOT_FOUND",
		},
		{"origin not listed", map[string]string{"Origin": "https://evil.example"}, 403, "ORIGIN_NOT_ALLOWED"},
		{"listed origin's subdomain", map[string]string{"Origin": "https://x.app.example"}, 403, "ORIGIN_NOT_ALLOWED"},
		{"no origin", map[string]string{"Origin": ""}, 403, "ORIGIN_NOT_ALLOWED"},
	}
	for _, c := range cases {
		r := p.call("wallet_kit_config", nil, c.headers)
		if r.Status != c.status || code(r) != c.code {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
		}
	}
	// The header name in any case; no body at all (as the SDK's utils send it).
	r := p.call(
		"wallet_kit_config",
		nil,
		map[string]string{"X-Auth-Proxy-Config-ID": "", "x-AUTH-proxy-config-id": p.cfgID},
	)
	if r.Status != 200 || r.Str("organizationId") != p.Org.OrganizationID ||
		r.Str("sessionExpirationSeconds") != "1200" ||
		r.Str("otpLength") != "8" ||
		r.Str("enabledProviders") != `["email","google","passkey"]` ||
		r.Str("oauthClientIds", "google") != "google-client-id" {
		t.Fatalf("wallet_kit_config: %d %s", r.Status, r.Raw)
	}
	if r := p.ok("wallet_kit_client_params", nil); string(r.Raw) != "{}" {
		t.Fatalf("wallet_kit_client_params: %s", r.Raw)
	}
	// Unknown paths and methods.
	if r := p.call("frobnicate", "{}", nil); r.Status != 404 {
		t.Errorf("unknown op: %d %s", r.Status, r.Raw)
	}
	req, _ := http.NewRequest(http.MethodGet, p.purl+"/v1/account", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("GET: %v %v", resp, err)
	}

	// CORS preflight for the SDK's headers, from any origin (it carries no config id).
	req, _ = http.NewRequest(http.MethodOptions, p.purl+"/v1/otp_init_v2", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-auth-proxy-config-id,x-captcha-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allow := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(
			allow,
			"x-auth-proxy-config-id",
		) || !strings.Contains(allow, "x-captcha-token") || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	// A change made while running applies to the next request: another origin, then disabled.
	ctx := context.Background()
	s := proxySettings()
	s.AllowedOrigins = []string{"https://evil.example"}
	if _, err := p.Server.Proxy.Update(ctx, p.Org.OrganizationID, s); err != nil {
		t.Fatal(err)
	}
	if r := p.call("wallet_kit_config", nil, map[string]string{"Origin": "https://evil.example"}); r.Status != 200 {
		t.Fatalf("after update: %d %s", r.Status, r.Raw)
	}
	if r := p.call("wallet_kit_config", nil, nil); r.Status != 403 {
		t.Fatalf("old origin after update: %d %s", r.Status, r.Raw)
	}
	if _, err := p.Server.Proxy.Disable(ctx, p.Org.OrganizationID); err != nil {
		t.Fatal(err)
	}
	if r := p.call("wallet_kit_config", nil, map[string]string{"Origin": "https://evil.example"}); r.Status != 403 ||
		code(r) != "AUTH_PROXY_DISABLED" {
		t.Fatalf("disabled: %d %s", r.Status, r.Raw)
	}
}

// TestProxyOTPSignupLogin drives the proxy's whole one-time-code flow over HTTP: otp_init →
// the e-mail → otp_verify (spec spellings) → signup with a wallet → otp_login with the hex
// client_signature → a session JWT → a whoami stamped with the session key; then the v2
// endpoints with the HPKE bundle and the clientSignature object; account look-ups; wrong codes
// burned after three tries; no code or key in logs or the database.
func TestProxyOTPSignupLogin(t *testing.T) {
	p := newProxyHarness(t, proxySettings(), servertest.SQLite())
	const email = "alice@example.com"

	// otp_init: the configuration's length and app name; otp_verify binds the device key
	// (sent as public_key).
	r := p.ok("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": email})
	otpID := r.Str("otpId")
	if otpID == "" || r.Body["otpEncryptionTargetBundle"] != nil {
		t.Fatalf("otp_init: %s", r.Raw)
	}
	code := p.lastCode(email)
	if len(code) != 8 {
		t.Fatalf("code %q is not the configured 8 characters", code)
	}
	es, _ := notify.ReadOutbox(p.out.Path())
	if !strings.Contains(es[len(es)-1].Email.Subject, "Acme Wallet") {
		t.Errorf("e-mail subject %q lacks the configured app name", es[len(es)-1].Email.Subject)
	}
	device, devicePub := p256Key(t)
	r = p.ok("otp_verify", map[string]any{"otpId": otpID, "otpCode": code, "public_key": devicePub})
	tok := r.Str("verificationToken")
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("otp_verify: %s", r.Raw)
	}

	// Sign-up with the verification token (and the hex client_signature over it): a
	// sub-organization with an Ed25519 wallet in the spec's {path, curve} shape. Sign-up does
	// not use the token up; the login below does.
	r = p.ok("signup", map[string]any{"userEmail": email, "userName": "alice", "organizationName": "alice's org",
		"verificationToken": tok, "client_signature": signDER(t, device, []byte(tok)),
		"apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{},
		"wallet": map[string]any{"path": "m/44'/501'/0'/0'", "curve": "CURVE_TYPE_ED25519"}})
	subID, userID := r.Str("organizationId"), r.Str("userId")
	if subID == "" || userID == "" || r.Str("wallet", "walletId") == "" || len(r.Str("wallet", "addresses", "0")) < 32 {
		t.Fatalf("signup: %s", r.Raw)
	}
	if r := p.ok("account", map[string]any{"filterType": "EMAIL", "filterValue": "Alice@Example.com"}); r.Str(
		"organizationId",
	) != subID {
		t.Fatalf("account by e-mail: %s", r.Raw)
	}
	if r := p.ok("account", map[string]any{"filterType": "EMAIL", "filterValue": "bob@example.com"}); string(
		r.Raw,
	) != "{}" {
		t.Fatalf("account of nobody: %s", r.Raw)
	}
	if r := p.call("account", map[string]any{"filterType": "SHOE_SIZE", "filterValue": "9"}, nil); r.Status != 400 ||
		!strings.Contains(r.Str("message"), "filterType") {
		t.Fatalf("bad filter: %d %s", r.Status, r.Raw)
	}

	// otp_login with the spec's client_signature: hex DER over SHA-256 of the token. The
	// proxy finds the sub-organization by the token's contact.
	sessPriv, sessPub := p.NewKey()
	r = p.ok(
		"otp_login",
		map[string]any{
			"verificationToken": tok,
			"public_key":        sessPub,
			"client_signature":  signDER(t, device, []byte(tok)),
		},
	)
	jwt := r.Str("session")
	sc, err := session.Parse(jwt, p.Server.Keys.Public(custody.Notarizer), p.Now())
	if err != nil || sc.OrganizationID != subID || sc.UserID != userID || sc.SessionType != session.ReadWrite {
		t.Fatalf("session %+v, %v", sc, err)
	}
	if exp := time.Unix(sc.Exp, 0); exp.Sub(p.Now()) < 1190*time.Second || exp.Sub(p.Now()) > 1210*time.Second {
		t.Errorf("session lifetime %v, want the configured 1200s", exp.Sub(p.Now()))
	}
	w := p.Client(subID, sessPriv).Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("organizationId") != subID || w.Str("userId") != userID {
		t.Fatalf("whoami with the session key: %s", w.Raw)
	}
	// The same token twice: the engine's refusal comes through as the engine gave it.
	r = p.call(
		"otp_login",
		map[string]any{
			"verificationToken": tok,
			"publicKey":         sessPub,
			"client_signature":  signDER(t, device, []byte(tok)),
		},
		nil,
	)
	if r.Status != 400 || !strings.Contains(r.Str("message"), "already used") {
		t.Fatalf("reused token: %d %s", r.Status, r.Raw)
	}

	// The v2 endpoints: the code encrypted to the target bundle, the clientSignature object.
	r = p.ok("otp_init_v2", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": email})
	otpID, bundle := r.Str("otpId"), r.Str("otpEncryptionTargetBundle")
	code2 := p.lastCode(email)
	device2, device2Pub := p256Key(t)
	enc, err := custody.SealOTPCode(bundle, code2, device2Pub, p.Server.PublicKeys().OTPPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	tok2 := p.ok("otp_verify_v2", map[string]any{"otpId": otpID, "encryptedOtpBundle": enc}).Str("verificationToken")
	claims, err := tokenClaimsForTest(tok2)
	if err != nil {
		t.Fatal(err)
	}
	sess2Priv, sess2Pub := p.NewKey()
	msg := fmt.Sprintf(`{"login":{"publicKey":%q},"tokenId":%q,"type":"USAGE_TYPE_LOGIN"}`, sess2Pub, claims.ID)
	if r := p.call("otp_login_v2", map[string]any{"verificationToken": tok2, "publicKey": sess2Pub}, nil); r.Status != 400 ||
		!strings.Contains(r.Str("message"), "clientSignature") {
		t.Fatalf("otp_login_v2 without a signature: %d %s", r.Status, r.Raw)
	}
	r = p.ok(
		"otp_login_v2",
		map[string]any{
			"verificationToken":  tok2,
			"publicKey":          sess2Pub,
			"organizationId":     subID,
			"invalidateExisting": true,
			"clientSignature": map[string]any{
				"publicKey": device2Pub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": signRaw(t, device2, []byte(msg)),
			},
		},
	)
	if sc2, err := session.Parse(r.Str("session"), p.Server.Keys.Public(custody.Notarizer), p.Now()); err != nil ||
		sc2.OrganizationID != subID {
		t.Fatalf("v2 session %+v, %v", sc2, err)
	}
	servertest.MustOK(t, p.Client(subID, sess2Priv).Query("whoami", nil))

	// Wrong codes: the engine's "Invalid OTP code" comes through; the third burns the code.
	r = p.ok("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": email})
	otpID = r.Str("otpId")
	code3 := p.lastCode(email)
	for i := 0; i < 3; i++ {
		r := p.call("otp_verify", map[string]any{"otpId": otpID, "otpCode": fmt.Sprintf("0000000%d", i)}, nil)
		if r.Status != 400 || !strings.Contains(r.Str("message"), "Invalid OTP code") {
			t.Fatalf("wrong code %d: %d %s", i, r.Status, r.Raw)
		}
	}
	if r := p.call("otp_verify", map[string]any{"otpId": otpID, "otpCode": code3}, nil); r.Status == 200 {
		t.Fatalf("the right code after three wrong ones: %s", r.Raw)
	}

	// Bad input is a 400 naming the field; SMS is not an enabled provider here.
	for _, c := range []struct {
		op    string
		body  any
		field string
	}{
		{"otp_init", map[string]any{"contact": email}, "otpType"},
		{"otp_init", map[string]any{"otpType": "OTP_TYPE_PIGEON", "contact": email}, "otpType"},
		{"otp_verify", map[string]any{"otpId": otpID}, "otpCode"},
		{"otp_login", map[string]any{"verificationToken": "x.y.z", "publicKey": sessPub}, "verificationToken"},
		{"otp_login", map[string]any{"verificationToken": tok, "publicKey": sessPub, "client_signature": "zz"}, "client_signature"},
		{"signup", map[string]any{"wallet": map[string]any{"curve": "CURVE_TYPE_RSA"}}, "wallet.curve"},
		{"signup", `{"apiKeys": 7}`, "apiKeys"},
		{"otp_verify_v2", `not json`, "body"},
	} {
		r := p.call(c.op, c.body, nil)
		if r.Status != 400 || !strings.Contains(r.Str("message"), c.field) {
			t.Errorf("%s %v: %d %s", c.op, c.body, r.Status, r.Raw)
		}
	}
	if r := p.call("otp_init", map[string]any{"otpType": "OTP_TYPE_SMS", "contact": "+14155550100"}, nil); r.Status != 403 ||
		r.Str("details", "0", "turnkeyErrorCode") != "PROVIDER_NOT_ENABLED" {
		t.Errorf("SMS not enabled: %d %s", r.Status, r.Raw)
	}

	// No code and no proxy key in the logs or the database.
	db := append(p.DatabaseBytes(), p.logs.Bytes()...)
	scalar := proxyScalar(t, p.Harness, p.cfgID)
	for _, secret := range []string{code, code2, code3, string(scalar), hex.EncodeToString(scalar), base64.StdEncoding.EncodeToString(scalar)} {
		if bytes.Contains(db, []byte(secret)) {
			t.Errorf("secret %q is in the logs or the database", secret)
		}
	}
	if !bytes.Contains(p.logs.Bytes(), []byte("auth proxy request")) {
		t.Error("the proxy logged nothing (the log check above proves nothing)")
	}
}

// The activity engine's refusals pass through the proxy unchanged: a signup naming an API key
// that is not a P-256 point fails as create_sub_organization does on the API.
func TestProxyPassesEngineErrorsThrough(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	r := p.call(
		"signup",
		map[string]any{
			"userEmail":      "a@example.com",
			"apiKeys":        []any{map[string]any{"apiKeyName": "k", "publicKey": "07" + strings.Repeat("11", 32)}},
			"authenticators": []any{},
			"oauthProviders": []any{},
		},
		nil,
	)
	direct := p.root.Submit(
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
		map[string]any{"subOrganizationName": "x", "rootQuorumThreshold": 1,
			"rootUsers": []any{
				map[string]any{
					"userName":  "a@example.com",
					"userEmail": "a@example.com",
					"apiKeys": []any{
						map[string]any{
							"apiKeyName": "k",
							"publicKey":  "07" + strings.Repeat("11", 32),
							"curveType":  "API_KEY_CURVE_P256",
						},
					},
					"authenticators": []any{},
					"oauthProviders": []any{},
				},
			}},
	)
	if r.Status != direct.Status || r.Str("message") != direct.Str("message") || r.Status != 400 {
		t.Fatalf("proxy %d %s, API %d %s", r.Status, r.Raw, direct.Status, direct.Raw)
	}
}

// tokenClaimsForTest reads a verification token's id.
func tokenClaimsForTest(tok string) (*struct{ ID string }, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("token %q", tok)
	}
	b, err := base64URL(parts[1])
	if err != nil {
		return nil, err
	}
	var c struct{ ID string }
	return &c, json.Unmarshal(b, &c)
}

func base64URL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

// With --coordinator-url the proxy forwards over HTTP to another Latchkey's API: the same
// answers, errors included.
func TestProxyRemoteCoordinator(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	p.Server.ProxyServer.Coordinator = authproxy.NewRemote(p.URL + "/")
	_, carolPub := p.NewKey()
	r := p.ok(
		"signup",
		map[string]any{"userEmail": "carol@example.com", "authenticators": []any{}, "oauthProviders": []any{},
			"apiKeys": []any{
				map[string]any{"apiKeyName": "k", "publicKey": carolPub, "curveType": "API_KEY_CURVE_P256"},
			},
			"wallet": map[string]any{
				"walletName": "main",
				"accounts": []any{map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32",
					"path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}},
			}},
	)
	if !strings.HasPrefix(r.Str("wallet", "addresses", "0"), "0x") {
		t.Fatalf("signup over HTTP: %s", r.Raw)
	}
	if a := p.ok("account", map[string]any{"filterType": "PUBLIC_KEY", "filterValue": carolPub}); a.Str(
		"organizationId",
	) != r.Str(
		"organizationId",
	) {
		t.Fatalf("account over HTTP: %s", a.Raw)
	}
	if r := p.call("otp_verify", map[string]any{"otpId": "00000000-0000-4000-8000-000000000000", "otpCode": "123456"}, nil); r.Status != 404 &&
		r.Status != 400 {
		t.Fatalf("engine error over HTTP: %d %s", r.Status, r.Raw)
	}
	// An unreachable coordinator is a 503, not a hang or a 500.
	p.Server.ProxyServer.Coordinator = authproxy.NewRemote("http://127.0.0.1:1")
	if r := p.call("account", map[string]any{"filterType": "EMAIL", "filterValue": "carol@example.com"}, nil); r.Status != 503 {
		t.Fatalf("unreachable coordinator: %d %s", r.Status, r.Raw)
	}
	for _, bad := range []string{"ftp://x", "not a url", "http://", "https://h/?q=1"} {
		if server.CheckCoordinatorURL(bad) == nil {
			t.Errorf("coordinator URL %q accepted", bad)
		}
	}
}

// Sign-up with a verification token (core's signUpWithOtp): the token must name the new
// user's contact and, bound to a key, come with a client signature by it (the token usage
// object, or the spec's hex signature over the token); sign-up leaves the token for the login.
func TestProxySignupWithVerificationToken(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	verified := func(email string) (*ecdsa.PrivateKey, string, string) {
		otpID := p.ok("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": email}).Str("otpId")
		device, devicePub := p256Key(t)
		tok := p.ok("otp_verify", map[string]any{"otpId": otpID, "otpCode": p.lastCode(email), "publicKey": devicePub}).
			Str("verificationToken")
		return device, devicePub, tok
	}
	device, devicePub, tok := verified("dave@example.com")
	claims, _ := tokenClaimsForTest(tok)
	base := func(email string) map[string]any {
		return map[string]any{
			"userEmail":         email,
			"verificationToken": tok,
			"apiKeys":           []any{},
			"authenticators":    []any{},
			"oauthProviders":    []any{},
		}
	}
	refused := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"another contact", base("eve@example.com"), "rootUsers"},
		{"no signature for a bound token", base("dave@example.com"), "clientSignature"},
	}
	wrongSig := base("dave@example.com")
	wrongSig["client_signature"] = signDER(t, device, []byte("something else"))
	refused = append(refused, struct {
		name  string
		body  map[string]any
		field string
	}{"a signature over other bytes", wrongSig, "signature"})
	for _, c := range refused {
		if r := p.call("signup", c.body, nil); r.Status != 400 || !strings.Contains(r.Str("message"), c.field) {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
		}
	}
	// The token usage form of core's signUpWithOtp.
	body := base("dave@example.com")
	msg := fmt.Sprintf(`{"signupV2":{"email":"dave@example.com"},"tokenId":%q,"type":"USAGE_TYPE_SIGNUP"}`, claims.ID)
	body["clientSignature"] = map[string]any{
		"publicKey": devicePub,
		"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
		"message":   msg,
		"signature": signRaw(t, device, []byte(msg)),
	}
	subID := p.ok("signup_v2", body).Str("organizationId")
	// The login after it uses the token.
	_, sessPub := p.NewKey()
	r := p.ok(
		"otp_login",
		map[string]any{
			"verificationToken": tok,
			"publicKey":         sessPub,
			"client_signature":  signRaw(t, device, []byte(tok)),
		},
	)
	if sc, err := session.Parse(r.Str("session"), p.Server.Keys.Public(custody.Notarizer), p.Now()); err != nil ||
		sc.OrganizationID != subID {
		t.Fatalf("login after sign-up: %+v %v", sc, err)
	}
	// A used token signs nobody up.
	if r := p.call("signup", base("dave@example.com"), nil); r.Status != 400 ||
		!strings.Contains(r.Str("message"), "already used") {
		t.Fatalf("sign-up with a used token: %d %s", r.Status, r.Raw)
	}
	// The spec's hex form over the token, for a second user.
	device2, _, tok2 := verified("frank@example.com")
	body = map[string]any{
		"userEmail":         "frank@example.com",
		"verificationToken": tok2,
		"client_signature":  signDER(t, device2, []byte(tok2)),
		"apiKeys":           []any{},
		"authenticators":    []any{},
		"oauthProviders":    []any{},
	}
	if r := p.ok("signup", body); r.Str("organizationId") == "" {
		t.Fatalf("sign-up with the hex signature: %s", r.Raw)
	}
}

// BenchmarkProxyAccount is one proxied look-up over HTTP: the configuration read, the proxy key
// unsealed to stamp, the stamp verified and the query run in process.
func BenchmarkProxyAccount(b *testing.B) {
	out, _ := notify.NewOutbox(filepath.Join(b.TempDir(), "outbox.jsonl"))
	h := servertest.New(b, servertest.WithConfig(func(c *server.Config) { c.Emailer = out }))
	ps := httptest.NewServer(h.Server.ProxyServer.Handler())
	b.Cleanup(ps.Close)
	_, created := h.RootOrg("Acme")
	cfg, err := h.Server.Proxy.Enable(context.Background(), created.OrganizationID, authproxy.DefaultSettings())
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"filterType":"EMAIL","filterValue":"nobody@example.com"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, ps.URL+"/v1/account", bytes.NewReader(body))
		req.Header.Set("X-Auth-Proxy-Config-ID", cfg.ID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// proxyScalar opens a configuration's sealed proxy key, for tests that look for it where it
// must not be.
func proxyScalar(t *testing.T, h *servertest.Harness, cfgID string) []byte {
	t.Helper()
	ctx := context.Background()
	var rec store.Record
	if err := h.Server.Store.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = r.Get(ctx, authproxy.KindConfig, cfgID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var st struct {
		OrgID          string `json:"organizationId"`
		SealedProxyKey []byte `json:"sealedProxyKey"`
	}
	if err := json.Unmarshal(rec.Data, &st); err != nil {
		t.Fatal(err)
	}
	scalar, err := h.Server.Keyring.Open(
		st.SealedProxyKey,
		custody.Binding{OrgID: st.OrgID, Kind: authproxy.KindConfig, ID: cfgID},
	)
	if err != nil || len(scalar) != 32 {
		t.Fatalf("proxy key: %d bytes, %v", len(scalar), err)
	}
	return scalar
}

// A login naming an organization that is not one of the proxy organization's sub-organizations
// is refused by the proxy, naming the field.
func TestProxyLoginOutsideItsOrganization(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	_, other := p.RootOrg("Other")
	_, pub := p.NewKey()
	for _, org := range []string{other.OrganizationID, p.Org.OrganizationID, "00000000-0000-4000-8000-000000000000"} {
		r := p.call("oauth_login", map[string]any{"oidcToken": "x.y.z", "publicKey": pub, "organizationId": org}, nil)
		if r.Status != 400 || !strings.Contains(r.Str("message"), "organizationId") {
			t.Errorf("oauth_login in %s: %d %s", org, r.Status, r.Raw)
		}
	}
}
