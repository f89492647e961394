package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

// TestProxyOAuth: the auth proxy's /v1/oauth_login and /v1/oauth2_authenticate end to end
// against a local OIDC issuer and a local X OAuth 2.0 provider: sign-up links the identity, the
// login finds the sub-organization by token (list_suborgs OIDC_TOKEN) and answers a session the
// notarizer signed, invalidateExisting revokes the earlier session key, and a code exchanged at
// X becomes Latchkey's own id_token that signs up and logs in like any other.
func TestProxyOAuth(t *testing.T) {
	var p *proxyHarness
	clock := func() time.Time { return p.Now() }
	iss, its := servertest.OIDCIssuer(t, clock)
	x := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			_ = r.ParseForm()
			if r.Form.Get("code") != "x-code" || r.Form.Get("code_verifier") != "x-verifier" {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			_, _ = w.Write([]byte(`{"access_token":"x-at","token_type":"bearer"}`))
		case "/me":
			if r.Header.Get("Authorization") != "Bearer x-at" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"data":{"id":"1234567","name":"Erin","username":"erin"}}`))
		}
	}))
	t.Cleanup(x.Close)

	p = newProxyHarness(t, proxySettings(), servertest.WithConfig(func(c *server.Config) {
		c.OIDCTrustedIssuers = []string{its.URL}
		c.OAuth2 = map[string]server.OAuth2Endpoints{"x": {TokenURL: x.URL + "/token", UserInfoURL: x.URL + "/me"}}
	}))
	mint := func(sub, nonce string) string {
		tok, err := iss.Mint(
			oidc.MintClaims{
				Subject:       sub,
				Audience:      "google-client-id",
				Nonce:         nonce,
				Email:         sub + "@example.com",
				EmailVerified: true,
			},
		)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	notarizer := p.Server.Keys.Public(custody.Notarizer)

	su := p.ok(
		"signup",
		map[string]any{
			"userName":       "dana",
			"oauthProviders": []any{map[string]any{"providerName": "Google", "oidcToken": mint("dana", "")}},
		},
	)
	subID, danaID := su.Str("organizationId"), su.Str("userId")
	if subID == "" || danaID == "" {
		t.Fatalf("signup: %s", su.Raw)
	}
	if a := p.ok("account", map[string]any{"filterType": "OIDC_TOKEN", "filterValue": mint("dana", "")}); a.Str(
		"organizationId",
	) != subID {
		t.Fatalf("account: %s", a.Raw)
	}

	// The login without organizationId: the proxy finds the sub-organization by the token.
	firstPriv, firstPub := p.NewKey()
	r := p.ok("oauth_login", map[string]any{"oidcToken": mint("dana", oidc.NonceFor(firstPub)), "publicKey": firstPub})
	sc, err := session.Parse(r.Str("session"), notarizer, p.Now())
	if err != nil || sc.OrganizationID != subID || sc.UserID != danaID {
		t.Fatalf("session %+v, %v (%s)", sc, err, r.Raw)
	}
	if w := p.Client(subID, firstPriv).Query("whoami", nil); w.Str("userId") != danaID {
		t.Fatalf("whoami with the session key: %s", w.Raw)
	}
	// The wrong nonce, and a user nobody signed up: refused through the proxy with the engine's words.
	_, otherPub := p.NewKey()
	if r := p.call("oauth_login", map[string]any{"oidcToken": mint("dana", oidc.NonceFor(otherPub)), "publicKey": firstPub, "organizationId": subID}, nil); r.Status != 400 ||
		!strings.Contains(string(r.Raw), "nonce") {
		t.Fatalf("wrong nonce: %d %s", r.Status, r.Raw)
	}
	if r := p.call("oauth_login", map[string]any{"oidcToken": mint("nobody", oidc.NonceFor(firstPub)), "publicKey": firstPub}, nil); r.Status < 400 {
		t.Fatalf("unknown user: %d %s", r.Status, r.Raw)
	}

	// invalidateExisting: the second login revokes the first session key.
	secondPriv, secondPub := p.NewKey()
	p.ok(
		"oauth_login",
		map[string]any{
			"oidcToken":          mint("dana", oidc.NonceFor(secondPub)),
			"publicKey":          secondPub,
			"organizationId":     subID,
			"invalidateExisting": true,
		},
	)
	if w := p.Client(subID, secondPriv).Query("whoami", nil); w.Str("userId") != danaID {
		t.Fatalf("whoami with the new session key: %s", w.Raw)
	}
	if w := p.Client(subID, firstPriv).Query("whoami", nil); w.Status == http.StatusOK {
		t.Fatalf("the first session key still works after invalidateExisting: %s", w.Raw)
	}

	// oauth2_authenticate: the proxy finds the organization's X credential by client id.
	p.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		p.root.Submit(
			"create_oauth2_credential",
			"ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL",
			map[string]any{"provider": "OAUTH2_PROVIDER_X",
				"clientId": "x-client", "encryptedClientSecret": servertest.EncryptToServer(t, p.Server.PublicKeys().ClientSecretsPublicKey, "s3cret-x")},
		),
	)
	erinPriv, erinPub := p.NewKey()
	authBody := map[string]any{
		"provider":     "OAUTH2_PROVIDER_X",
		"authCode":     "x-code",
		"redirectUri":  "https://app.example/cb",
		"codeVerifier": "x-verifier",
		"nonce":        oidc.NonceFor(erinPub),
		"clientId":     "x-client",
	}
	if r := p.call("oauth2_authenticate", map[string]any{"provider": "OAUTH2_PROVIDER_X", "authCode": "x-code", "redirectUri": "https://app.example/cb",
		"codeVerifier": "x-verifier", "nonce": oidc.NonceFor(erinPub), "clientId": "unknown-client"}, nil); r.Status != 400 ||
		!strings.Contains(string(r.Raw), "clientId") {
		t.Fatalf("unknown client id: %d %s", r.Status, r.Raw)
	}
	own := p.ok("oauth2_authenticate", authBody).Str("oidcToken")
	if own == "" {
		t.Fatal("oauth2_authenticate: no oidcToken")
	}
	su = p.ok(
		"signup",
		map[string]any{
			"userName":       "erin",
			"oauthProviders": []any{map[string]any{"providerName": "X", "oidcToken": own}},
		},
	)
	r = p.ok("oauth_login", map[string]any{"oidcToken": own, "publicKey": erinPub})
	if sc, err := session.Parse(r.Str("session"), notarizer, p.Now()); err != nil ||
		sc.OrganizationID != su.Str("organizationId") ||
		sc.UserID != su.Str("userId") {
		t.Fatalf("erin's session %+v, %v", sc, err)
	}
	if w := p.Client(su.Str("organizationId"), erinPriv).Query("whoami", nil); w.Str("userId") != su.Str("userId") {
		t.Fatalf("erin's whoami: %s", w.Raw)
	}
	if (p.OnSQLite() && strings.Contains(string(p.DatabaseBytes()), "s3cret-x")) ||
		strings.Contains(string(p.logs.Bytes()), "s3cret-x") {
		t.Fatal("the X client secret is in the clear in the database or the logs")
	}
}
