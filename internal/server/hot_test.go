package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
)

// servedFromMemory sends whoami until the caller cache serves it. A PostgreSQL process serves
// nothing from memory until its listener is up, which may take a moment after it opens.
func servedFromMemory(t *testing.T, c *servertest.Client) {
	t.Helper()
	callers := c.H.Server.API.Callers
	for range 200 {
		before := callers.Hits()
		servertest.MustOK(t, c.Query("whoami", nil))
		if callers.Hits() > before {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("whoami in %s was never served from memory", c.Org)
}

// TestRevokedKeyRefusedAtOnce: in one process the API-key resolution is served from memory
// (package hot), and a key deleted by a committed activity is refused by the very next
// request, also where it was cached for a sub-organization it reaches through its parent.
func TestRevokedKeyRefusedAtOnce(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	subID, _, _ := h.EndUser(root, "eve", "eve@example.com")
	priv, pub := h.NewKey()
	r := root.Submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID,
		"apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}})
	servertest.MustOK(t, r)
	keyID := r.Str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	own, viaParent := h.Client(created.OrganizationID, priv), h.Client(subID, priv)
	for _, c := range []*servertest.Client{own, viaParent} {
		servedFromMemory(t, c)
	}
	servertest.MustOK(
		t,
		root.Submit(
			"delete_api_keys",
			"ACTIVITY_TYPE_DELETE_API_KEYS",
			map[string]any{"userId": created.UserID, "apiKeyIds": []string{keyID}},
		),
	)
	for _, c := range []*servertest.Client{own, viaParent} {
		if got := c.Query("whoami", nil); got.Status != http.StatusUnauthorized {
			t.Errorf("the deleted key is still accepted in %s: %d %s", c.Org, got.Status, got.Raw)
		}
	}
	// The root key, cached too, still works: the cache was dropped, not poisoned.
	servertest.MustOK(t, root.Query("whoami", nil))
	servertest.MustOK(t, root.Query("whoami", nil))
}

// TestDeletedWalletSignsNoMore: the key sign_raw_payload resolves is served from memory, and a
// deleted wallet's account is not: the next signature is refused without the cache's help.
func TestDeletedWalletSignsNoMore(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	walletID := w.Str("activity", "result", "createWalletResult", "walletId")
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	sign := func(payload string) servertest.Response {
		return root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr,
			"payload": payload, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	}
	signers := h.Server.Signers
	servertest.MustOK(t, sign(strings.Repeat("01", 32)))
	served := false
	for i := 2; i < 200 && !served; i++ {
		before := signers.Hits()
		servertest.MustOK(t, sign(fmt.Sprintf("%064x", i)))
		served = signers.Hits() > before
		if !served {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !served {
		t.Fatal("no signature resolved its key from memory")
	}
	servertest.MustOK(
		t,
		root.Submit(
			"delete_wallets",
			"ACTIVITY_TYPE_DELETE_WALLETS",
			map[string]any{"walletIds": []string{walletID}, "deleteWithoutExport": true},
		),
	)
	before := signers.Hits()
	if r := sign(strings.Repeat("03", 32)); r.Status == http.StatusOK {
		t.Fatalf("signed with a deleted wallet's account: %s", r.Raw)
	}
	if signers.Hits() != before {
		t.Fatal("the deleted account was served from memory")
	}
}
