package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestRevokedKeyRefusedAtOnce: in one process the API-key resolution is served from memory
// (package hot), and a key deleted by a committed activity is refused by the very next
// request, also where it was cached for a sub-organization it reaches through its parent.
func TestRevokedKeyRefusedAtOnce(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	subID, _, _ := h.endUser(root, "eve", "eve@example.com")
	priv, pub := h.newKey()
	r := root.submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID,
		"apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}})
	mustOK(t, r)
	keyID := r.str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	own, viaParent := h.client(created.OrganizationID, priv), h.client(subID, priv)
	callers := h.s.API.Callers
	for _, c := range []*client{own, viaParent} {
		mustOK(t, c.query("whoami", nil))
		before := callers.Hits()
		mustOK(t, c.query("whoami", nil))
		if callers.Hits() == before {
			t.Fatalf("the second whoami in %s was not served from memory", c.org)
		}
	}
	mustOK(t, root.submit("delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS", map[string]any{"userId": created.UserID, "apiKeyIds": []string{keyID}}))
	for _, c := range []*client{own, viaParent} {
		if got := c.query("whoami", nil); got.status != http.StatusUnauthorized {
			t.Errorf("the deleted key is still accepted in %s: %d %s", c.org, got.status, got.raw)
		}
	}
	// The root key, cached too, still works: the cache was dropped, not poisoned.
	mustOK(t, root.query("whoami", nil))
	mustOK(t, root.query("whoami", nil))
}

// TestRevokedKeyCachedByEveryProcess is TestRevokedKeyRefusedByEveryProcess with proof that
// both processes served the key from memory before it was deleted.
func TestRevokedKeyCachedByEveryProcess(t *testing.T) {
	a, b := twoProcesses(t)
	root, created := a.rootOrg("Acme")
	priv, pub := a.newKey()
	r := root.submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID,
		"apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}})
	mustOK(t, r)
	keyID := r.str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	viaA, viaB := a.client(created.OrganizationID, priv), b.client(created.OrganizationID, priv)
	for _, c := range []*client{viaA, viaB} {
		callers := c.h.s.API.Callers
		served := false
		// The listener of a freshly opened PostgreSQL process may not be up yet: until it
		// is, nothing is served from memory.
		for i := 0; i < 200 && !served; i++ {
			before := callers.Hits()
			mustOK(t, c.query("whoami", nil))
			served = callers.Hits() > before
		}
		if !served {
			t.Fatal("a process never served the key from memory")
		}
	}
	mustOK(t, root.submit("delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS", map[string]any{"userId": created.UserID, "apiKeyIds": []string{keyID}}))
	for name, c := range map[string]*client{"the deleting process": viaA, "the other process": viaB} {
		if got := c.query("whoami", nil); got.status != http.StatusUnauthorized {
			t.Errorf("%s still accepts the deleted key: %d %s", name, got.status, got.raw)
		}
	}
}

// TestDeletedWalletSignsNoMore: the key sign_raw_payload resolves is served from memory, and a
// deleted wallet's account is not: the next signature is refused without the cache's help.
func TestDeletedWalletSignsNoMore(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	w := root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": testAccounts[:1]})
	mustOK(t, w)
	walletID := w.str("activity", "result", "createWalletResult", "walletId")
	addr := w.str("activity", "result", "createWalletResult", "addresses", "0")
	sign := func(payload string) response {
		return root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr,
			"payload": payload, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	}
	mustOK(t, sign(strings.Repeat("01", 32)))
	before := h.s.signers.Hits()
	mustOK(t, sign(strings.Repeat("02", 32)))
	if h.s.signers.Hits() == before {
		t.Fatal("the second signature did not resolve its key from memory")
	}
	mustOK(t, root.submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}, "deleteWithoutExport": true}))
	before = h.s.signers.Hits()
	if r := sign(strings.Repeat("03", 32)); r.status == http.StatusOK {
		t.Fatalf("signed with a deleted wallet's account: %s", r.raw)
	}
	if h.s.signers.Hits() != before {
		t.Fatal("the deleted account was served from memory")
	}
}
