package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/session"
)

// encryptToServer is @turnkey/crypto's quorumKeyEncrypt (encryptOauth2ClientSecret), written
// from its description, for tests.
func encryptToServer(t *testing.T, receiverHex, msg string) string {
	t.Helper()
	rb, _ := hex.DecodeString(receiverHex)
	recv, err := ecdh.P256().NewPublicKey(rb)
	if err != nil {
		t.Fatal(err)
	}
	eph, _ := ecdh.P256().GenerateKey(rand.Reader)
	shared, _ := eph.ECDH(recv)
	sender := eph.PublicKey().Bytes()
	mac := hmac.New(sha512.New, append(append(append([]byte{}, sender...), rb...), shared...))
	mac.Write([]byte("qos_encryption_hmac_message"))
	block, _ := aes.NewCipher(mac.Sum(nil)[:32])
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	aad := append(append(append(append([]byte{}, sender...), 65), rb...), 65)
	ct := gcm.Seal(nil, nonce, []byte(msg), aad)
	out := append(append([]byte{}, nonce...), sender...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(ct)))
	return hex.EncodeToString(append(out, ct...))
}

// testIssuer is a local OIDC issuer (ES256, discovery and JWKS) on loopback whose clock is now.
func testIssuer(t *testing.T, now func() time.Time) (*oidc.Issuer, *httptest.Server) {
	t.Helper()
	var iss *oidc.Issuer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { iss.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var err error
	if iss, err = oidc.NewIssuer(oidc.IssuerConfig{URL: ts.URL, Signer: k, Now: now}); err != nil {
		t.Fatal(err)
	}
	return iss, ts
}

// TestOAuth: id_tokens from a trusted local issuer link identities at sign-up, look up
// sub-organizations and log users in (nonce = SHA-256 of the session key); an OAuth 2.0 client's
// secret is sealed, and oauth2_authenticate exchanges a code at a local provider for Latchkey's
// own id_token, which then signs up and logs in like any other.
func TestOAuth(t *testing.T) {
	var h *harness
	clock := func() time.Time { return h.clock() }
	google, googleTS := testIssuer(t, clock)
	untrusted, _ := testIssuer(t, clock)

	// The OAuth 2.0 provider: checks the PKCE verifier and the client secret.
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			_ = r.ParseForm()
			if r.Form.Get("code") != "the-code" || r.Form.Get("code_verifier") != "the-verifier" || r.Form.Get("client_secret") != "s3cret-discord" {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			_, _ = w.Write([]byte(`{"access_token":"at-123","token_type":"Bearer"}`))
		case "/me":
			if r.Header.Get("Authorization") != "Bearer at-123" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"id":"80351110224678912","username":"nelly","email":"nelly@example.com","verified":true}`))
		}
	}))
	t.Cleanup(provider.Close)

	h = newHarnessWith(t, func(c *Config) {
		c.OIDCTrustedIssuers = []string{googleTS.URL}
		c.OAuth2 = map[string]OAuth2Endpoints{"discord": {TokenURL: provider.URL + "/token", UserInfoURL: provider.URL + "/me"}}
	})
	root, _ := h.rootOrg("Parent")
	mint := func(iss *oidc.Issuer, sub, aud, nonce string) string {
		tok, err := iss.Mint(oidc.MintClaims{Subject: sub, Audience: aud, Nonce: nonce, Email: sub + "@example.com", EmailVerified: true})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	// Sign-up links the identity of a verified token.
	r := root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{"subOrganizationName": "carol's", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "carol", "apiKeys": []any{}, "authenticators": []any{},
			"oauthProviders": []any{map[string]any{"providerName": "Google", "oidcToken": mint(google, "carol", "web-app", "")}}}}})
	mustOK(t, r)
	subID := r.str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	carolID := r.str("activity", "result", "createSubOrganizationResultV8", "rootUserIds", "0")
	h.advance(time.Millisecond)
	wantError(t, root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{"subOrganizationName": "x", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "x", "apiKeys": []any{}, "authenticators": []any{},
			"oauthProviders": []any{map[string]any{"providerName": "Evil", "oidcToken": mint(untrusted, "x", "web-app", "")}}}}}),
		http.StatusBadRequest, 3, "not trusted")

	// The parent finds the sub-organization by token.
	l := root.query("list_suborgs", map[string]any{"filterType": "OIDC_TOKEN", "filterValue": mint(google, "carol", "web-app", "")})
	mustOK(t, l)
	if l.str("organizationIds", "0") != subID {
		t.Fatalf("list_suborgs OIDC_TOKEN: %s", l.raw)
	}

	// oauth_login: the token's nonce must be the session key's.
	parent := h.client(subID, root.priv)
	sessPriv, sessPub := h.newKey()
	login := func(tok string) response {
		h.advance(time.Millisecond)
		return parent.submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": tok, "publicKey": sessPub, "invalidateExisting": true})
	}
	r = login(mint(google, "carol", "web-app", oidc.NonceFor(sessPub)))
	mustOK(t, r)
	sc, err := session.Parse(r.str("activity", "result", "oauthLoginResult", "session"), h.s.Keys.Public(custody.Notarizer), h.clock())
	if err != nil || sc.OrganizationID != subID || sc.UserID != carolID {
		t.Fatalf("session %+v, %v", sc, err)
	}
	if w := h.client(subID, sessPriv).query("whoami", nil); w.str("userId") != carolID {
		t.Fatalf("whoami: %s", w.raw)
	}
	wantError(t, login(mint(google, "carol", "web-app", oidc.NonceFor("02"+strings.Repeat("ab", 32)))), http.StatusBadRequest, 3, "nonce")
	wantError(t, login(mint(google, "carol", "other-app", oidc.NonceFor(sessPub))), http.StatusNotFound, 5, "no user")
	wantError(t, login(mint(untrusted, "carol", "web-app", oidc.NonceFor(sessPub))), http.StatusBadRequest, 3, "not trusted")
	old := mint(google, "carol", "web-app", oidc.NonceFor(sessPub))
	h.advance(time.Hour)
	wantError(t, login(old), http.StatusBadRequest, 3, "expired")
	mustOK(t, login(mint(google, "carol", "web-app", oidc.NonceFor(sessPub)))) // a fresh session for what follows

	// Providers of a user.
	carol := h.client(subID, sessPriv)
	h.advance(time.Millisecond)
	r = carol.submit("create_oauth_providers", "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS", map[string]any{"userId": carolID,
		"oauthProviders": []any{map[string]any{"providerName": "Google 2", "oidcToken": mint(google, "carol-2", "web-app", "")}}})
	mustOK(t, r)
	pid := r.str("activity", "result", "createOauthProvidersResult", "providerIds", "0")
	g := carol.query("get_oauth_providers", map[string]any{"userId": carolID})
	if len(g.body["oauthProviders"].([]any)) != 2 || g.str("oauthProviders", "1", "subject") != "carol-2" || g.str("oauthProviders", "1", "issuer") != googleTS.URL {
		t.Fatalf("get_oauth_providers: %s", g.raw)
	}
	h.advance(time.Millisecond)
	mustOK(t, carol.submit("delete_oauth_providers", "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS", map[string]any{"userId": carolID, "providerIds": []string{pid}}))
	h.advance(time.Millisecond)
	wantError(t, carol.submit("delete_oauth_providers", "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS", map[string]any{"userId": carolID, "providerIds": []string{pid}}),
		http.StatusNotFound, 5, "parameters.providerIds[0]")

	// An OAuth 2.0 client for Discord, its secret sealed.
	secretsKey := h.s.PublicKeys().ClientSecretsPublicKey
	h.advance(time.Millisecond)
	wantError(t, root.submit("create_oauth2_credential", "ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL", map[string]any{"provider": "OAUTH2_PROVIDER_DISCORD",
		"clientId": "discord-client", "encryptedClientSecret": encryptToServer(t, h.s.PublicKeys().OTPPublicKey, "s3cret-discord")}),
		http.StatusBadRequest, 3, "parameters.encryptedClientSecret")
	h.advance(time.Millisecond)
	r = root.submit("create_oauth2_credential", "ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL", map[string]any{"provider": "OAUTH2_PROVIDER_DISCORD",
		"clientId": "discord-client", "encryptedClientSecret": encryptToServer(t, secretsKey, "s3cret-discord")})
	mustOK(t, r)
	credID := r.str("activity", "result", "createOauth2CredentialResult", "oauth2CredentialId")
	lc := root.query("list_oauth2_credentials", nil)
	if lc.str("oauth2Credentials", "0", "oauth2CredentialId") != credID || lc.str("oauth2Credentials", "0", "clientId") != "discord-client" {
		t.Fatalf("list_oauth2_credentials: %s", lc.raw)
	}

	// oauth2_authenticate: the code exchanged with PKCE; Latchkey's own token comes back.
	_, nellyPub := h.newKey()
	auth := func(code string) response {
		h.advance(time.Millisecond)
		return root.submit("oauth2_authenticate", "ACTIVITY_TYPE_OAUTH2_AUTHENTICATE", map[string]any{"oauth2CredentialId": credID, "authCode": code,
			"redirectUri": "https://app.example/cb", "codeVerifier": "the-verifier", "nonce": oidc.NonceFor(nellyPub)})
	}
	wantError(t, auth("wrong-code"), http.StatusBadRequest, 3, "parameters.authCode")
	r = auth("the-code")
	mustOK(t, r)
	if strings.Contains(string(r.raw), "the-verifier") || strings.Contains(string(r.raw), "the-code") {
		t.Fatalf("the code or verifier is echoed: %s", r.raw)
	}
	own := r.str("activity", "result", "oauth2AuthenticateResult", "oidcToken")
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(strings.Split(own, ".")[1])
	_ = json.Unmarshal(b, &claims)
	if claims["sub"] != "discord:80351110224678912" || claims["aud"] != "discord-client" || claims["email"] != "nelly@example.com" {
		t.Fatalf("minted claims: %v", claims)
	}
	// Its issuer's documents are on the API; sign-up and login accept it.
	if resp, err := http.Get(h.url + "/oidc/.well-known/jwks.json"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("jwks: %v %v", resp, err)
	}
	h.advance(time.Millisecond)
	r = root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{"subOrganizationName": "nelly's", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "nelly", "apiKeys": []any{}, "authenticators": []any{},
			"oauthProviders": []any{map[string]any{"providerName": "Discord", "oidcToken": own}}}}})
	mustOK(t, r)
	nellySub := r.str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	h.advance(time.Millisecond)
	mustOK(t, h.client(nellySub, root.priv).submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": own, "publicKey": nellyPub}))

	// The secret is nowhere in the clear.
	if strings.Contains(string(readAll(t, h.s.cfg.DataDir)), "s3cret-discord") {
		t.Fatal("the client secret is in the database in the clear")
	}
}
