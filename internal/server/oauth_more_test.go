package server_test

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
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// TestOAuthCredentialAndRotation: the older oauth activity answers a credential bundle whose key
// stamps as the user and expires; a token signed with a key the issuer published after the
// JWKS was cached verifies once the minimum refresh interval has passed; an OAuth 2.0
// credential is read, updated (its secret re-sealed) and deleted, and neither secret is in the
// database in the clear.
func TestOAuthCredentialAndRotation(t *testing.T) {
	var h *servertest.Harness
	clock := func() time.Time { return h.Now() }
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
	h = servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.OIDCTrustedIssuers = []string{ts.URL} }), servertest.SQLite())
	root, _ := h.RootOrg("Parent")
	mint := func(iss *oidc.Issuer, sub, nonce string) string {
		tok, err := iss.Mint(oidc.MintClaims{Subject: sub, Audience: "web-app", Nonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	r := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{"subOrganizationName": "fay's", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "fay", "apiKeys": []any{}, "authenticators": []any{},
			"oauthProviders": []any{map[string]any{"providerName": "Google", "oidcToken": mint(first, "fay", "")}}}}})
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	fayID := r.Str("activity", "result", "createSubOrganizationResultV8", "rootUserIds", "0")
	parent := h.Client(subID, root.Priv)

	// oauth: the bundle is encrypted to targetPublicKey; its key is fay's, for expirationSeconds.
	targetPriv, targetPub := h.NewKey()
	h.Advance(time.Millisecond)
	servertest.WantError(t, parent.Submit("oauth", "ACTIVITY_TYPE_OAUTH", map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(root.Pub)), "targetPublicKey": targetPub}),
		http.StatusBadRequest, 3, "nonce")
	h.Advance(time.Millisecond)
	r = parent.Submit("oauth", "ACTIVITY_TYPE_OAUTH", map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(targetPub)), "targetPublicKey": targetPub,
		"apiKeyName": "fay-oauth", "expirationSeconds": "60"})
	servertest.MustOK(t, r)
	if r.Str("activity", "result", "oauthResult", "userId") != fayID || r.Str("activity", "result", "oauthResult", "apiKeyId") == "" {
		t.Fatalf("oauth: %s", r.Raw)
	}
	scalar, err := custody.DecryptCredentialBundle(r.Str("activity", "result", "oauthResult", "credentialBundle"), targetPriv)
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
	servertest.MustOK(t, parent.Submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": mint(cur.Load(), "fay", oidc.NonceFor(pub)), "publicKey": pub}))
	// A token from the retired key no longer verifies.
	h.Advance(time.Millisecond)
	servertest.WantError(t, parent.Submit("oauth_login", "ACTIVITY_TYPE_OAUTH_LOGIN", map[string]any{"oidcToken": mint(first, "fay", oidc.NonceFor(pub)), "publicKey": pub}),
		http.StatusBadRequest, 3, "")

	// OAuth 2.0 credentials: get, update (new secret, sealed again), delete.
	secretsKey := h.Server.PublicKeys().ClientSecretsPublicKey
	h.Advance(time.Millisecond)
	r = root.Submit("create_oauth2_credential", "ACTIVITY_TYPE_CREATE_OAUTH2_CREDENTIAL", map[string]any{"provider": "OAUTH2_PROVIDER_X",
		"clientId": "x-client", "encryptedClientSecret": servertest.EncryptToServer(t, secretsKey, "first-secret-x")})
	servertest.MustOK(t, r)
	credID := r.Str("activity", "result", "createOauth2CredentialResult", "oauth2CredentialId")
	g := root.Query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID})
	servertest.MustOK(t, g)
	if g.Str("oauth2Credential", "clientId") != "x-client" || g.Str("oauth2Credential", "provider") != "OAUTH2_PROVIDER_X" || strings.Contains(string(g.Raw), "first-secret-x") {
		t.Fatalf("get_oauth2_credential: %s", g.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(t, root.Submit("update_oauth2_credential", "ACTIVITY_TYPE_UPDATE_OAUTH2_CREDENTIAL", map[string]any{"oauth2CredentialId": credID,
		"provider": "OAUTH2_PROVIDER_X", "clientId": "x-client-2", "encryptedClientSecret": servertest.EncryptToServer(t, secretsKey, "second-secret-x")}))
	if g := root.Query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID}); g.Str("oauth2Credential", "clientId") != "x-client-2" {
		t.Fatalf("after update: %s", g.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(t, root.Submit("delete_oauth2_credential", "ACTIVITY_TYPE_DELETE_OAUTH2_CREDENTIAL", map[string]any{"oauth2CredentialId": credID}))
	if g := root.Query("get_oauth2_credential", map[string]any{"oauth2CredentialId": credID}); g.Status != http.StatusNotFound {
		t.Fatalf("get after delete: %d %s", g.Status, g.Raw)
	}
	if l := root.Query("list_oauth2_credentials", nil); strings.Contains(string(l.Raw), credID) {
		t.Fatalf("list after delete: %s", l.Raw)
	}
	db := string(h.DatabaseBytes())
	if strings.Contains(db, "first-secret-x") || strings.Contains(db, "second-secret-x") {
		t.Fatal("a client secret is in the database in the clear")
	}
}
