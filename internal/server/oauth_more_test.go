package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/oidc"
)

// TestOAuthCredentialAndRotation: the older oauth activity answers a credential bundle whose key
// stamps as the user and expires; a token signed with a key the issuer published after the
// JWKS was cached verifies once the minimum refresh interval has passed; an OAuth 2.0
// credential is read, updated (its secret re-sealed) and deleted, and neither secret is in the
// database in the clear.
func TestOAuthCredentialAndRotation(t *testing.T) {
	var h *harness
	clock := func() time.Time { return h.clock() }
	var cur atomic.Pointer[oidc.Issuer]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cur.Load().ServeHTTP(w, r) }))
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
	h = newHarnessWith(t, func(c *Config) { c.OIDCTrustedIssuers = []string{ts.URL} })
	root, _ := h.rootOrg("Parent")
	mint := func(iss *oidc.Issuer, sub, nonce string) string {
		tok, err := iss.Mint(oidc.MintClaims{Subject: sub, Audience: "web-app", Nonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	r := root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{"subOrganizationName": "fay's", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "fay", "apiKeys": []any{}, "authenticators": []any{},
			"oauthProviders": []any{map[string]any{"providerName": "Google", "oidcToken": mint(first, "fay", "")}}}}})
	mustOK(t, r)
	subID := r.str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	fayID := r.str("activity", "result", "createSubOrganizationResultV8", "rootUserIds", "0")
	parent := h.client(subID, root.priv)

	// oauth: the bundle is encrypted to targetPublicKey; its key is fay's, for expirationSeconds.
	targetPriv, targetPub := h.newKey()
	h.advance(time.Millisecond)
	wantError(t, parent.submit("oauth", "ACTIVITY_TYPE_OAUTH", map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(root.pub)), "targetPublicKey": targetPub}),
		http.StatusBadRequest, 3, "nonce")
	h.advance(time.Millisecond)
	r = parent.submit("oauth", "ACTIVITY_TYPE_OAUTH", map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(targetPub)), "targetPublicKey": targetPub,
		"apiKeyName": "fay-oauth", "expirationSeconds": "60"})
	mustOK(t, r)
	if r.str("activity", "result", "oauthResult", "userId") != fayID || r.str("activity", "result", "oauthResult", "apiKeyId") == "" {
		t.Fatalf("oauth: %s", r.raw)
	}
	scalar, err := custody.DecryptCredentialBundle(r.str("activity", "result", "oauthResult", "credentialBundle"), targetPriv)
	if err != nil {
		t.Fatal(err)
	}
	fay := h.client(subID, hex.EncodeToString(scalar))
	if w := fay.query("whoami", nil); w.str("userId") != fayID {
		t.Fatalf("the oauth credential's whoami: %s", w.raw)
	}
	h.advance(61 * time.Second)
	if w := fay.query("whoami", nil); w.status == http.StatusOK {
		t.Fatalf("the oauth credential outlived expirationSeconds: %s", w.raw)
	}

	// The issuer rotates its key: the new kid is fetched (the cached JWKS lacks it).
	cur.Store(newIssuer())
	h.advance(2 * time.Minute)
	_, pub := h.newKey()
	h.advance(time.Millisecond)
	mustOK(t, parent.submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": mint(cur.Load(), "fay", oidc.NonceFor(pub)), "publicKey": pub}))
	// A token from the retired key no longer verifies.
	h.advance(time.Millisecond)
	wantError(t, parent.submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(pub)), "publicKey": pub}),
		http.StatusBadRequest, 3, "")

	// OAuth 2.0 credentials: get, update (new secret, sealed again), delete.
	secretsKey := h.s.PublicKeys().ClientSecretsPublicKey
	h.advance(time.Millisecond)
	r = root.submit("create_oauth2_credential", "ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL", map[string]any{"provider": "OAUTH2_PROVIDER_X",
		"clientId": "x-client", "encryptedClientSecret": encryptToServer(t, secretsKey, "first-secret-x")})
	mustOK(t, r)
	credID := r.str("activity", "result", "createOauth2CredentialResult", "oauth2CredentialId")
	g := root.query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID})
	mustOK(t, g)
	if g.str("oauth2Credential", "clientId") != "x-client" || g.str("oauth2Credential", "provider") != "OAUTH2_PROVIDER_X" || strings.Contains(string(g.raw), "first-secret-x") {
		t.Fatalf("get_oauth2_credential: %s", g.raw)
	}
	h.advance(time.Millisecond)
	mustOK(t, root.submit("update_oauth2_credential", "ACTIVITY_TYPE_UPDATE_OAUTH2_CREDENTIAL", map[string]any{"oauth2CredentialId": credID,
		"provider": "OAUTH2_PROVIDER_X", "clientId": "x-client-2", "encryptedClientSecret": encryptToServer(t, secretsKey, "second-secret-x")}))
	if g := root.query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID}); g.str("oauth2Credential", "clientId") != "x-client-2" {
		t.Fatalf("after update: %s", g.raw)
	}
	h.advance(time.Millisecond)
	mustOK(t, root.submit("delete_oauth2_credential", "ACTIVITY_TYPE_DELETE_OAUTH2_CREDENTIAL", map[string]any{"oauth2CredentialId": credID}))
	if g := root.query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID}); g.status != http.StatusNotFound {
		t.Fatalf("get after delete: %d %s", g.status, g.raw)
	}
	if l := root.query("list_oauth2_credentials", nil); strings.Contains(string(l.raw), credID) {
		t.Fatalf("list after delete: %s", l.raw)
	}
	db := string(readAll(t, h.s.cfg.DataDir))
	if strings.Contains(db, "first-secret-x") || strings.Contains(db, "second-secret-x") {
		t.Fatal("a client secret is in the database in the clear")
	}
}
