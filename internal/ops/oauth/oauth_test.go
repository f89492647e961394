package oauth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

// TestOAuth: id_tokens from a trusted local issuer link identities at sign-up, look up
// sub-organizations and log users in (nonce = SHA-256 of the session key); an OAuth 2.0 client's
// secret is sealed, and oauth2_authenticate exchanges a code at a local provider for Latchkey's
// own id_token, which then signs up and logs in like any other.
func TestOAuth(t *testing.T) {
	var h *servertest.Harness
	clock := func() time.Time { return h.Now() }
	google, googleTS := servertest.OIDCIssuer(t, clock)
	untrusted, _ := servertest.OIDCIssuer(t, clock)

	// The OAuth 2.0 provider: checks the PKCE verifier and the client secret.
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			_ = r.ParseForm()
			if r.Form.Get("code") != "the-code" || r.Form.Get("code_verifier") != "the-verifier" ||
				r.Form.Get("client_secret") != "s3cret-discord" {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			_, _ = w.Write([]byte(`{"access_token":"at-123","token_type":"Bearer"}`))
		case "/me":
			if r.Header.Get("Authorization") != "Bearer at-123" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write(
				[]byte(`{"id":"80351110224678912","username":"nelly","email":"nelly@example.com","verified":true}`),
			)
		}
	}))
	t.Cleanup(provider.Close)

	h = servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.OIDCTrustedIssuers = []string{googleTS.URL}
		c.OAuth2 = map[string]server.OAuth2Endpoints{
			"discord": {TokenURL: provider.URL + "/token", UserInfoURL: provider.URL + "/me"},
		}
	}))
	root, _ := h.RootOrg("Parent")
	mint := func(iss *oidc.Issuer, sub, aud, nonce string) string {
		tok, err := iss.Mint(
			oidc.MintClaims{
				Subject:       sub,
				Audience:      aud,
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

	// Sign-up links the identity of a verified token.
	r := root.Submit(
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
		map[string]any{"subOrganizationName": "carol's", "rootQuorumThreshold": 1,
			"rootUsers": []any{map[string]any{"userName": "carol", "apiKeys": []any{}, "authenticators": []any{},
				"oauthProviders": []any{
					map[string]any{"providerName": "Google", "oidcToken": mint(google, "carol", "web-app", "")},
				}}}},
	)
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	carolID := r.Str("activity", "result", "createSubOrganizationResultV8", "rootUserIds", "0")
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		root.Submit(
			"create_sub_organization",
			"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
			map[string]any{"subOrganizationName": "x", "rootQuorumThreshold": 1,
				"rootUsers": []any{map[string]any{"userName": "x", "apiKeys": []any{}, "authenticators": []any{},
					"oauthProviders": []any{
						map[string]any{"providerName": "Evil", "oidcToken": mint(untrusted, "x", "web-app", "")},
					}}}},
		),
		http.StatusBadRequest,
		3,
		"not trusted",
	)

	// The parent finds the sub-organization by token.
	l := root.Query(
		"list_suborgs",
		map[string]any{"filterType": "OIDC_TOKEN", "filterValue": mint(google, "carol", "web-app", "")},
	)
	servertest.MustOK(t, l)
	if l.Str("organizationIds", "0") != subID {
		t.Fatalf("list_suborgs OIDC_TOKEN: %s", l.Raw)
	}

	// oauth_login: the token's nonce must be the session key's.
	parent := h.Client(subID, root.Priv)
	sessPriv, sessPub := h.NewKey()
	login := func(tok string) servertest.Response {
		h.Advance(time.Millisecond)
		return parent.Submit(
			"oauth_login",
			"ACTIVITY_TYPE_OAUTH_LOGIN",
			map[string]any{"oidcToken": tok, "publicKey": sessPub, "invalidateExisting": true},
		)
	}
	r = login(mint(google, "carol", "web-app", oidc.NonceFor(sessPub)))
	servertest.MustOK(t, r)
	sc, err := session.Parse(
		r.Str("activity", "result", "oauthLoginResult", "session"),
		h.Server.Keys.Public(custody.Notarizer),
		h.Now(),
	)
	if err != nil || sc.OrganizationID != subID || sc.UserID != carolID {
		t.Fatalf("session %+v, %v", sc, err)
	}
	if w := h.Client(subID, sessPriv).Query("whoami", nil); w.Str("userId") != carolID {
		t.Fatalf("whoami: %s", w.Raw)
	}
	servertest.WantError(
		t,
		login(mint(google, "carol", "web-app", oidc.NonceFor("02"+strings.Repeat("ab", 32)))),
		http.StatusBadRequest,
		3,
		"nonce",
	)
	servertest.WantError(
		t,
		login(mint(google, "carol", "other-app", oidc.NonceFor(sessPub))),
		http.StatusNotFound,
		5,
		"no user",
	)
	servertest.WantError(
		t,
		login(mint(untrusted, "carol", "web-app", oidc.NonceFor(sessPub))),
		http.StatusBadRequest,
		3,
		"not trusted",
	)
	old := mint(google, "carol", "web-app", oidc.NonceFor(sessPub))
	h.Advance(time.Hour)
	servertest.WantError(t, login(old), http.StatusBadRequest, 3, "expired")
	servertest.MustOK(
		t,
		login(mint(google, "carol", "web-app", oidc.NonceFor(sessPub))),
	) // a fresh session for what follows

	// Providers of a user.
	carol := h.Client(subID, sessPriv)
	h.Advance(time.Millisecond)
	r = carol.Submit("create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS", map[string]any{"userId": carolID,
		"oauthProviders": []any{
			map[string]any{"providerName": "Google 2", "oidcToken": mint(google, "carol-2", "web-app", "")},
		}})
	servertest.MustOK(t, r)
	pid := r.Str("activity", "result", "createOauthProvidersResult", "providerIds", "0")
	g := carol.Query("get_oauth_providers", map[string]any{"userId": carolID})
	if len(g.Body["oauthProviders"].([]any)) != 2 || g.Str("oauthProviders", "1", "subject") != "carol-2" ||
		g.Str("oauthProviders", "1", "issuer") != googleTS.URL {
		t.Fatalf("get_oauth_providers: %s", g.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		carol.Submit(
			"delete_oauth_providers",
			"ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS",
			map[string]any{"userId": carolID, "providerIds": []string{pid}},
		),
	)
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		carol.Submit(
			"delete_oauth_providers",
			"ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS",
			map[string]any{"userId": carolID, "providerIds": []string{pid}},
		),
		http.StatusNotFound,
		5,
		"parameters.providerIds[0]",
	)

	// An OAuth 2.0 client for Discord, its secret sealed.
	secretsKey := h.Server.PublicKeys().ClientSecretsPublicKey
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		root.Submit(
			"create_oauth2_credential",
			"ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL",
			map[string]any{"provider": "OAUTH2_PROVIDER_DISCORD",
				"clientId": "discord-client", "encryptedClientSecret": servertest.EncryptToServer(t, h.Server.PublicKeys().OTPPublicKey, "s3cret-discord")},
		),
		http.StatusBadRequest,
		3,
		"parameters.encryptedClientSecret",
	)
	h.Advance(time.Millisecond)
	r = root.Submit(
		"create_oauth2_credential",
		"ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL",
		map[string]any{"provider": "OAUTH2_PROVIDER_DISCORD",
			"clientId": "discord-client", "encryptedClientSecret": servertest.EncryptToServer(t, secretsKey, "s3cret-discord")},
	)
	servertest.MustOK(t, r)
	credID := r.Str("activity", "result", "createOauth2CredentialResult", "oauth2CredentialId")
	lc := root.Query("list_oauth2_credentials", nil)
	if lc.Str("oauth2Credentials", "0", "oauth2CredentialId") != credID ||
		lc.Str("oauth2Credentials", "0", "clientId") != "discord-client" {
		t.Fatalf("list_oauth2_credentials: %s", lc.Raw)
	}

	// oauth2_authenticate: the code exchanged with PKCE; Latchkey's own token comes back.
	_, nellyPub := h.NewKey()
	auth := func(code string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit(
			"oauth2_authenticate",
			"ACTIVITY_TYPE_OAUTH2_AUTHENTICATE",
			map[string]any{"oauth2CredentialId": credID, "authCode": code,
				"redirectUri": "https://app.example/cb", "codeVerifier": "the-verifier", "nonce": oidc.NonceFor(nellyPub)},
		)
	}
	servertest.WantError(t, auth("wrong-code"), http.StatusBadRequest, 3, "parameters.authCode")
	r = auth("the-code")
	servertest.MustOK(t, r)
	if strings.Contains(string(r.Raw), "the-verifier") || strings.Contains(string(r.Raw), "the-code") {
		t.Fatalf("the code or verifier is echoed: %s", r.Raw)
	}
	own := r.Str("activity", "result", "oauth2AuthenticateResult", "oidcToken")
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(strings.Split(own, ".")[1])
	_ = json.Unmarshal(b, &claims)
	if claims["sub"] != "discord:80351110224678912" || claims["aud"] != "discord-client" ||
		claims["email"] != "nelly@example.com" {
		t.Fatalf("minted claims: %v", claims)
	}
	// Its issuer's documents are on the API; sign-up and login accept it.
	if resp, err := http.Get(h.URL + "/oidc/.well-known/jwks.json"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("jwks: %v %v", resp, err)
	}
	h.Advance(time.Millisecond)
	r = root.Submit(
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
		map[string]any{"subOrganizationName": "nelly's", "rootQuorumThreshold": 1,
			"rootUsers": []any{map[string]any{"userName": "nelly", "apiKeys": []any{}, "authenticators": []any{},
				"oauthProviders": []any{map[string]any{"providerName": "Discord", "oidcToken": own}}}}},
	)
	servertest.MustOK(t, r)
	nellySub := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	h.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		h.Client(nellySub, root.Priv).
			Submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": own, "publicKey": nellyPub}),
	)

	// The secret is nowhere in the clear (in the SQLite file; on PostgreSQL this runs for the
	// OAuth identities' keys, which hold NUL).
	if h.OnSQLite() && strings.Contains(string(h.DatabaseBytes()), "s3cret-discord") {
		t.Fatal("the client secret is in the database in the clear")
	}
}

// TestOAuthCredentialAndRotation: the older oauth activity answers a credential bundle whose key
// stamps as the user and expires; a token signed with a key the issuer published after the
// JWKS was cached verifies once the minimum refresh interval has passed; an OAuth 2.0
// credential is read, updated (its secret re-sealed) and deleted, and neither secret is in the
// database in the clear.
func TestOAuthCredentialAndRotation(t *testing.T) {
	var h *servertest.Harness
	clock := func() time.Time { return h.Now() }
	var cur atomic.Pointer[oidc.Issuer]
	ts := httptest.NewServer(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cur.Load().ServeHTTP(w, r) }),
	)
	t.Cleanup(ts.Close)
	newIssuer := func() *oidc.Issuer {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		iss, err := oidc.NewIssuer(oidc.IssuerConfig{URL: ts.URL, Signer: k, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return iss
	}
	first := newIssuer()
	cur.Store(first)
	h = servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.OIDCTrustedIssuers = []string{ts.URL} }))
	root, _ := h.RootOrg("Parent")
	mint := func(iss *oidc.Issuer, sub, nonce string) string {
		tok, err := iss.Mint(oidc.MintClaims{Subject: sub, Audience: "web-app", Nonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	r := root.Submit(
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
		map[string]any{"subOrganizationName": "fay's", "rootQuorumThreshold": 1,
			"rootUsers": []any{map[string]any{"userName": "fay", "apiKeys": []any{}, "authenticators": []any{},
				"oauthProviders": []any{
					map[string]any{"providerName": "Google", "oidcToken": mint(first, "fay", "")},
				}}}},
	)
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	fayID := r.Str("activity", "result", "createSubOrganizationResultV8", "rootUserIds", "0")
	parent := h.Client(subID, root.Priv)

	// oauth: the bundle is encrypted to targetPublicKey; its key is fay's, for expirationSeconds.
	targetPriv, targetPub := h.NewKey()
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"oauth",
			"ACTIVITY_TYPE_OAUTH",
			map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(root.Pub)), "targetPublicKey": targetPub},
		),
		http.StatusBadRequest,
		3,
		"nonce",
	)
	h.Advance(time.Millisecond)
	r = parent.Submit(
		"oauth",
		"ACTIVITY_TYPE_OAUTH",
		map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(targetPub)), "targetPublicKey": targetPub,
			"apiKeyName": "fay-oauth", "expirationSeconds": "60"},
	)
	servertest.MustOK(t, r)
	if r.Str("activity", "result", "oauthResult", "userId") != fayID ||
		r.Str("activity", "result", "oauthResult", "apiKeyId") == "" {
		t.Fatalf("oauth: %s", r.Raw)
	}
	scalar, err := custody.DecryptCredentialBundle(
		r.Str("activity", "result", "oauthResult", "credentialBundle"),
		targetPriv,
	)
	if err != nil {
		t.Fatal(err)
	}
	fay := h.Client(subID, hex.EncodeToString(scalar))
	if w := fay.Query("whoami", nil); w.Str("userId") != fayID {
		t.Fatalf("the oauth credential's whoami: %s", w.Raw)
	}
	h.Advance(61 * time.Second)
	if w := fay.Query("whoami", nil); w.Status == http.StatusOK {
		t.Fatalf("the oauth credential outlived expirationSeconds: %s", w.Raw)
	}

	// The issuer rotates its key: the new kid is fetched (the cached JWKS lacks it).
	cur.Store(newIssuer())
	h.Advance(2 * time.Minute)
	_, pub := h.NewKey()
	h.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		parent.Submit(
			"oauth_login",
			"ACTIVITY_TYPE_OAUTH_LOGIN",
			map[string]any{"oidcToken": mint(cur.Load(), "fay", oidc.NonceFor(pub)), "publicKey": pub},
		),
	)
	// A token from the retired key no longer verifies.
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"oauth_login",
			"ACTIVITY_TYPE_OAUTH_LOGIN",
			map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(pub)), "publicKey": pub},
		),
		http.StatusBadRequest,
		3,
		"",
	)

	// OAuth 2.0 credentials: get, update (new secret, sealed again), delete.
	secretsKey := h.Server.PublicKeys().ClientSecretsPublicKey
	h.Advance(time.Millisecond)
	r = root.Submit(
		"create_oauth2_credential",
		"ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL",
		map[string]any{"provider": "OAUTH2_PROVIDER_X",
			"clientId": "x-client", "encryptedClientSecret": servertest.EncryptToServer(t, secretsKey, "first-secret-x")},
	)
	servertest.MustOK(t, r)
	credID := r.Str("activity", "result", "createOauth2CredentialResult", "oauth2CredentialId")
	g := root.Query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID})
	servertest.MustOK(t, g)
	if g.Str("oauth2Credential", "clientId") != "x-client" ||
		g.Str("oauth2Credential", "provider") != "OAUTH2_PROVIDER_X" ||
		strings.Contains(string(g.Raw), "first-secret-x") {
		t.Fatalf("get_oauth2_credential: %s", g.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		root.Submit(
			"update_oauth2_credential",
			"ACTIVITY_TYPE_UPDATE_OAUTH2_CREDENTIAL",
			map[string]any{"oauth2CredentialId": credID,
				"provider": "OAUTH2_PROVIDER_X", "clientId": "x-client-2", "encryptedClientSecret": servertest.EncryptToServer(t, secretsKey, "second-secret-x")},
		),
	)
	if g := root.Query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID}); g.Str(
		"oauth2Credential",
		"clientId",
	) != "x-client-2" {
		t.Fatalf("after update: %s", g.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(
		t,
		root.Submit(
			"delete_oauth2_credential",
			"ACTIVITY_TYPE_DELETE_OAUTH2_CREDENTIAL",
			map[string]any{"oauth2CredentialId": credID},
		),
	)
	if g := root.Query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID}); g.Status != http.StatusNotFound {
		t.Fatalf("get after delete: %d %s", g.Status, g.Raw)
	}
	if l := root.Query("list_oauth2_credentials", nil); strings.Contains(string(l.Raw), credID) {
		t.Fatalf("list after delete: %s", l.Raw)
	}
	if h.OnSQLite() {
		db := string(h.DatabaseBytes())
		if strings.Contains(db, "first-secret-x") || strings.Contains(db, "second-secret-x") {
			t.Fatal("a client secret is in the database in the clear")
		}
	}
}
