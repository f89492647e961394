package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// tkcli's `turnkey ethereum tx` sends ACTIVITY_TYPE_SIGN_TRANSACTION (the V1 type) with V2
// parameters (signWith, type, unsignedTransaction; its go-openapi models in that order), and
// Turnkey signs it: the gateway reads parameters by the path's request message. Latchkey does the
// same: parameters invalid for the named version but valid for the path's current one are taken
// as that version. The V1 body (privateKeyId) still works as V1.
func TestTkcliSignTransactionV1TypeWithV2Parameters(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	w := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]})
	servertest.MustOK(t, w)
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	body := fmt.Sprintf(`{"organizationId":%q,"parameters":{"signWith":%q,"type":"TRANSACTION_TYPE_ETHEREUM","unsignedTransaction":%q},"timestampMs":"%d","type":"ACTIVITY_TYPE_SIGN_TRANSACTION"}`,
		created.OrganizationID, addr, servertest.UnsignedEthTx("0x1111111111111111111111111111111111111111"), h.Now().UnixMilli())
	r := root.Post("/public/v1/submit/sign_transaction", []byte(body))
	servertest.MustOK(t, r)
	if signed := r.Str("activity", "result", "signTransactionResult", "signedTransaction"); !strings.HasPrefix(signed, "02") && !strings.HasPrefix(signed, "0x02") {
		t.Fatalf("signed transaction %q: %s", signed, r.Raw)
	}
	if r.Str("activity", "type") != "ACTIVITY_TYPE_SIGN_TRANSACTION_V2" || r.Str("activity", "intent", "signTransactionIntentV2", "signWith") != addr {
		t.Fatalf("recorded as: %s", r.Raw)
	}
	// Parameters valid for neither version are refused naming the named version's field.
	h.Advance(1)
	bad := fmt.Sprintf(`{"organizationId":%q,"parameters":{"type":"TRANSACTION_TYPE_ETHEREUM"},"timestampMs":"%d","type":"ACTIVITY_TYPE_SIGN_TRANSACTION"}`,
		created.OrganizationID, h.Now().UnixMilli())
	servertest.WantError(t, root.Post("/public/v1/submit/sign_transaction", []byte(bad)), 400, 3, "parameters.privateKeyId is required")
}

// go-sdk's wallets example (examples/wallets/create_wallet_accounts) adds an Ethereum account at
// m/44'/60'/0'/0/0; its README says Turnkey answers an error when the wallet already has an
// account there, and to pick an unused path. Latchkey refuses the same way (409, naming the path
// and format) and creates the account at a new path.
func TestCreateWalletAccountsAtATakenPath(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	w := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": []any{map[string]any{
		"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}})
	servertest.MustOK(t, w)
	walletID := w.Str("activity", "result", "createWalletResult", "walletId")
	account := func(path string) map[string]any {
		return map[string]any{"walletId": walletID, "accounts": []any{map[string]any{"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
			"curve": "CURVE_SECP256K1", "path": path, "pathFormat": "PATH_FORMAT_BIP32"}}}
	}
	h.Advance(1)
	r := root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", account("m/44'/60'/0'/0/0"))
	if r.Status != 409 || !strings.Contains(r.Str("message"), "m/44'/60'/0'/0/0") {
		t.Fatalf("a second account at a taken path: %d %s", r.Status, r.Raw)
	}
	h.Advance(1)
	servertest.MustOK(t, root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", account("m/44'/60'/0'/0/1")))
}
