package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/servertest"
)

// proxyClient stamps requests with an organization's proxy key, as the auth proxy does.
type proxyClient struct {
	h   *servertest.Harness
	cfg *authproxy.Config
	Org string
}

func (p *proxyClient) Post(path string, body []byte) servertest.Response {
	p.h.T.Helper()
	cfg, err := p.h.Server.Proxy.ByConfigID(context.Background(), p.cfg.ID)
	if err != nil {
		p.h.T.Fatal(err)
	}
	name, value, err := p.h.Server.Proxy.Stamp(cfg, body)
	if err != nil {
		p.h.T.Fatal(err)
	}
	return p.h.Post(path, body, map[string]string{name: value})
}

func (p *proxyClient) Submit(op, typ string, params any) servertest.Response {
	p.h.T.Helper()
	b, _ := json.Marshal(params)
	body := fmt.Appendf(
		nil,
		`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":%q}`,
		b,
		p.Org,
		p.h.Now().UnixMilli(),
		typ,
	)
	return p.Post("/public/v1/submit/"+op, body)
}

func (p *proxyClient) Query(op string, params map[string]any) servertest.Response {
	p.h.T.Helper()
	params["organizationId"] = p.Org
	b, _ := json.Marshal(params)
	return p.Post("/public/v1/query/"+op, b)
}

// TestProxyConfigLifecycle: enable creates the proxy user and key; update changes settings;
// disable removes the user and key; enable again gives a new key under the same config id.
func TestProxyConfigLifecycle(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	ctx := context.Background()
	m := h.Server.Proxy

	if _, err := m.Get(ctx, created.OrganizationID); apierr.From(err).Code != apierr.NotFound {
		t.Fatalf("Get before enable: %v", err)
	}
	if _, err := m.Update(ctx, created.OrganizationID, authproxy.DefaultSettings()); apierr.From(
		err,
	).Code != apierr.NotFound {
		// Update with Enabled set enables; only an update that leaves it off needs a config.
		if err != nil {
			t.Fatalf("Update on a fresh org: %v", err)
		}
		if _, err := m.Disable(ctx, created.OrganizationID); err != nil {
			t.Fatal(err)
		}
	}
	s := authproxy.DefaultSettings()
	s.AllowedOrigins = []string{"https://app.example"}
	c, err := m.Enable(ctx, created.OrganizationID, s)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == "" || c.ProxyUserID == "" || c.ProxyAPIKeyID == "" || !c.Settings.Enabled ||
		c.Settings.AllowedOrigins[0] != "https://app.example" {
		t.Fatalf("enabled config: %+v", c)
	}
	if _, err := m.Enable(ctx, created.OrganizationID, s); apierr.From(err).Code != apierr.AlreadyExists {
		t.Fatalf("second enable: %v", err)
	}
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), "sealed") {
		t.Fatalf("the config's JSON carries the key: %s", b)
	}
	// The proxy user and its key are visible to the organization, the key as a P-256 API key.
	r := root.Query("get_user", map[string]any{"userId": c.ProxyUserID})
	servertest.MustOK(t, r)
	if r.Str("user", "userName") != authproxy.ProxyUserName ||
		r.Str("user", "apiKeys", "0", "credential", "type") != "CREDENTIAL_TYPE_API_KEY_P256" ||
		r.Str("user", "apiKeys", "0", "credential", "publicKey") != c.ProxyPublicKey {
		t.Fatalf("proxy user: %s", r.Raw)
	}
	if byID, err := m.ByConfigID(ctx, c.ID); err != nil || byID.OrgID != created.OrganizationID {
		t.Fatalf("ByConfigID: %+v, %v", byID, err)
	}
	if _, err := m.ByConfigID(ctx, "00000000-0000-4000-8000-000000000000"); apierr.From(err).Code != apierr.NotFound {
		t.Fatalf("unknown config id: %v", err)
	}

	// Update: settings change in place, the key stays.
	s.SessionExpirationSeconds = 3600
	s.EnabledProviders = []string{"email", "sms"}
	u, err := m.Update(ctx, created.OrganizationID, s)
	if err != nil || u.ID != c.ID || u.ProxyAPIKeyID != c.ProxyAPIKeyID || u.Settings.SessionExpirationSeconds != 3600 {
		t.Fatalf("update: %+v, %v", u, err)
	}
	bad := s
	bad.OTPLength = 3
	if _, err := m.Update(ctx, created.OrganizationID, bad); err == nil || !strings.Contains(err.Error(), "otpLength") {
		t.Fatalf("bad update: %v", err)
	}

	// Disable: the user and key are gone; the proxy key no longer stamps anything.
	p := &proxyClient{h: h, cfg: c, Org: created.OrganizationID}
	d, err := m.Disable(ctx, created.OrganizationID)
	if err != nil || d.Settings.Enabled || d.ProxyUserID != "" || d.ID != c.ID {
		t.Fatalf("disable: %+v, %v", d, err)
	}
	if _, _, err := m.Stamp(d, []byte("{}")); err != authproxy.ErrDisabled {
		t.Fatalf("stamp with a disabled config: %v", err)
	}
	if r := root.Query("get_user", map[string]any{"userId": c.ProxyUserID}); r.Status != http.StatusNotFound {
		t.Fatalf("proxy user after disable: %d %s", r.Status, r.Raw)
	}
	// Enable again: same config id, new user and key.
	e, err := m.Enable(ctx, created.OrganizationID, d.Settings)
	if err != nil || e.ID != c.ID || e.ProxyPublicKey == c.ProxyPublicKey ||
		e.Settings.SessionExpirationSeconds != 3600 {
		t.Fatalf("re-enable: %+v, %v", e, err)
	}
	p.cfg = e
	r = p.Query("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "nobody@example.com"})
	servertest.MustOK(t, r)

	// A sub-organization cannot have a proxy; an unknown organization is a 404.
	sub := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7", map[string]any{
		"subOrganizationName": "sub", "rootQuorumThreshold": 1,
		"rootUsers": []any{
			map[string]any{"userName": "u", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}},
		}})
	servertest.MustOK(t, sub)
	subID := sub.Str("activity", "result", "createSubOrganizationResultV7", "subOrganizationId")
	if _, err := m.Enable(ctx, subID, authproxy.DefaultSettings()); err == nil ||
		!strings.Contains(err.Error(), "sub-organization") {
		t.Fatalf("enable on a sub-org: %v", err)
	}
	if _, err := m.Enable(ctx, "00000000-0000-4000-8000-000000000000", authproxy.DefaultSettings()); apierr.From(
		err,
	).Code != apierr.NotFound {
		t.Fatalf("enable on an unknown org: %v", err)
	}
}

// TestProxyKeyStopsAtSignupAndLogin: the proxy key may create a sub-organization, send a
// one-time code and look users up, and nothing else: no signing, exporting, policies, users,
// voting or reading the organization's data, whatever the organization's policies say.
func TestProxyKeyStopsAtSignupAndLogin(t *testing.T) {
	h, _ := otpHarness(t)
	root, created := h.RootOrg("Acme")
	ctx := context.Background()
	c, err := h.Server.Proxy.Enable(ctx, created.OrganizationID, authproxy.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	p := &proxyClient{h: h, cfg: c, Org: created.OrganizationID}

	// A wallet and a policy that allows everything to everyone: the proxy still cannot use them.
	r := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "treasury",
		"accounts": []any{
			map[string]any{
				"curve":         "CURVE_SECP256K1",
				"pathFormat":    "PATH_FORMAT_BIP32",
				"path":          "m/44'/60'/0'/0/0",
				"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
			},
		}})
	servertest.MustOK(t, r)
	walletID := r.Str("activity", "result", "createWalletResult", "walletId")
	addr := r.Str("activity", "result", "createWalletResult", "addresses", "0")
	r = root.Submit(
		"create_policy",
		"ACTIVITY_TYPE_CREATE_POLICY_V3",
		map[string]any{
			"policyName": "allow all",
			"effect":     "EFFECT_ALLOW",
			"condition":  "true",
			"consensus":  "true",
			"notes":      "n",
		},
	)
	servertest.MustOK(t, r)

	_, targetPub := h.NewKey()
	refused := []struct {
		op, typ string
		params  any
	}{
		{
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{
				"signWith":     addr,
				"payload":      "00",
				"encoding":     "PAYLOAD_ENCODING_HEXADECIMAL",
				"hashFunction": "HASH_FUNCTION_KECCAK256",
			},
		},
		{
			"export_wallet",
			"ACTIVITY_TYPE_EXPORT_WALLET",
			map[string]any{"walletId": walletID, "targetPublicKey": targetPub},
		},
		{
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{
				"policyName": "mine",
				"effect":     "EFFECT_ALLOW",
				"condition":  "true",
				"consensus":  "true",
				"notes":      "n",
			},
		},
		{
			"create_api_keys",
			"ACTIVITY_TYPE_CREATE_API_KEYS_V2",
			map[string]any{
				"userId": c.ProxyUserID,
				"apiKeys": []any{
					map[string]any{"apiKeyName": "more", "publicKey": targetPub, "curveType": "API_KEY_CURVE_P256"},
				},
			},
		},
		{
			"create_users",
			"ACTIVITY_TYPE_CREATE_USERS_V3",
			map[string]any{
				"users": []any{
					map[string]any{
						"userName":       "x",
						"apiKeys":        []any{},
						"authenticators": []any{},
						"oauthProviders": []any{},
						"userTags":       []any{},
					},
				},
			},
		},
		{"approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": "sha256:00"}},
		{"delete_sub_organization", "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", map[string]any{}},
	}
	for _, x := range refused {
		r := p.Submit(x.op, x.typ, x.params)
		if r.Status != http.StatusForbidden || !strings.Contains(r.Str("message"), "auth proxy key") {
			t.Errorf("%s by the proxy key: %d %s", x.op, r.Status, r.Raw)
		}
	}
	for _, q := range []string{"list_wallets", "list_users", "whoami", "list_policies", "list_activities", "get_organization"} {
		if r := p.Query(q, map[string]any{}); r.Status != http.StatusForbidden {
			t.Errorf("query %s by the proxy key: %d %s", q, r.Status, r.Raw)
		}
	}

	// What it may do: sign a user up, send a code, look users up.
	_, endUserPub := h.NewKey()
	r = p.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7", map[string]any{
		"subOrganizationName": "alice", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "k",
				"publicKey":  endUserPub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}}}})
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV7", "subOrganizationId")
	r = p.Submit(
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"},
	)
	servertest.MustOK(t, r)
	r = p.Query("list_suborgs", map[string]any{"filterType": "PUBLIC_KEY", "filterValue": endUserPub})
	servertest.MustOK(t, r)
	if r.Str("organizationIds", "0") != subID {
		t.Fatalf("lookup: %s", r.Raw)
	}
	// The e-mail address the proxy key wrote without a verification token is unproven: it
	// matches no look-up.
	r = p.Query("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "alice@example.com"})
	servertest.MustOK(t, r)
	if r.Str("organizationIds", "0") != "" {
		t.Fatalf("an unproven e-mail address matched a look-up: %s", r.Raw)
	}
	// In the new sub-organization the proxy key (a parent credential) can do nothing else either.
	p.Org = subID
	r = p.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": []any{}})
	if r.Status != http.StatusForbidden {
		t.Fatalf("create_wallet in the sub-org by the proxy key: %d %s", r.Status, r.Raw)
	}
}

// TestProxyKeyNotInDatabase: the proxy's private key never reaches the database file in the
// clear: the stored configuration holds it sealed, and neither its bytes nor its hex appear in
// the file.
func TestProxyKeyNotInDatabase(t *testing.T) {
	h := servertest.New(t, servertest.SQLite())
	_, created := h.RootOrg("Acme")
	ctx := context.Background()
	c, err := h.Server.Proxy.Enable(ctx, created.OrganizationID, authproxy.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	scalar := proxyScalar(t, h, c.ID)
	h.Server.Close()
	db := h.DatabaseBytes()
	for _, secret := range [][]byte{scalar, []byte(hex.EncodeToString(scalar)), []byte(base64.StdEncoding.EncodeToString(scalar))} {
		if bytes.Contains(db, secret) {
			t.Fatal("the proxy's private key is in the database file in the clear")
		}
	}
}
