package server_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/mr-tron/base58"
	"golang.org/x/crypto/sha3"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/custody/hd"
	"github.com/latchkey/latchkey/internal/servertest"
)

func keccak(b []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}

func TestWalletsSignExportImport(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts, "mnemonicLength": 24})
	servertest.MustOK(t, r)
	walletID := r.Str("activity", "result", "createWalletResult", "walletId")
	ethAddr := r.Str("activity", "result", "createWalletResult", "addresses", "0")
	solAddr := r.Str("activity", "result", "createWalletResult", "addresses", "1")
	if !strings.HasPrefix(ethAddr, "0x") || len(ethAddr) != 42 || !strings.HasPrefix(r.Str("activity", "result", "createWalletResult", "addresses", "2"), "bc1p") {
		t.Fatalf("addresses: %s", r.Raw)
	}

	// Sign a digest with the Ethereum account: the signature recovers to its address.
	digest := keccak([]byte("hello"))
	s := root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": strings.ToLower(ethAddr),
		"payload": "0x" + hex.EncodeToString(digest), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	servertest.MustOK(t, s)
	res := s.Body["activity"].(map[string]any)["result"].(map[string]any)["signRawPayloadResult"].(map[string]any)
	rb, _ := hex.DecodeString(res["r"].(string))
	sb, _ := hex.DecodeString(res["s"].(string))
	vb, _ := hex.DecodeString(res["v"].(string))
	pub, _, err := ecdsa.RecoverCompact(append([]byte{27 + 4 + vb[0]}, append(rb, sb...)...), digest)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := address.Derive("ADDRESS_FORMAT_ETHEREUM", "CURVE_SECP256K1", pub.SerializeCompressed()); got != ethAddr {
		t.Fatalf("signature recovers to %s, want %s", got, ethAddr)
	}
	// Text with KECCAK256 hashes server-side.
	servertest.MustOK(t, root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": ethAddr,
		"payload": "hello", "encoding": "PAYLOAD_ENCODING_TEXT_UTF8", "hashFunction": "HASH_FUNCTION_KECCAK256"}))
	// Ed25519: NOT_APPLICABLE only, r‖s verifies under the Solana address.
	msg := []byte("solana message bytes")
	servertest.WantError(t, root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": solAddr,
		"payload": hex.EncodeToString(msg), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusBadRequest, 3, "HASH_FUNCTION_NOT_APPLICABLE")
	ss := root.Submit("sign_raw_payloads", "ACTIVITY_TYPE_SIGN_RAW_PAYLOADS", map[string]any{"signWith": solAddr,
		"payloads": []string{hex.EncodeToString(msg), hex.EncodeToString(msg)}, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NOT_APPLICABLE"})
	servertest.MustOK(t, ss)
	sol, _ := base58.Decode(solAddr)
	sig, _ := hex.DecodeString(ss.Str("activity", "result", "signRawPayloadsResult", "signatures", "1", "r") + ss.Str("activity", "result", "signRawPayloadsResult", "signatures", "1", "s"))
	if !ed25519.Verify(sol, msg, sig) {
		t.Fatal("ed25519 signature does not verify under the Solana address")
	}
	// A NO_OP payload must be a digest; an unknown signWith is a 404.
	servertest.WantError(t, root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": ethAddr,
		"payload": "abcd", "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusBadRequest, 3, "32-byte digest")
	servertest.WantError(t, root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": "0x0000000000000000000000000000000000000001",
		"payload": hex.EncodeToString(digest), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusNotFound, 5, "parameters.signWith")

	// Unexported wallets are not deleted by accident.
	servertest.WantError(t, root.Submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}}), http.StatusBadRequest, 9, "not been exported")

	// Export the mnemonic, re-derive locally: the same addresses.
	recvPriv, recvPub := h.NewKey()
	e := root.Submit("export_wallet", "ACTIVITY_TYPE_EXPORT_WALLET", map[string]any{"walletId": walletID, "targetPublicKey": recvPub})
	servertest.MustOK(t, e)
	mn, err := custody.OpenExportBundle(e.Str("activity", "result", "exportWalletResult", "exportBundle"), recvPriv, created.OrganizationID, h.Server.PublicKeys().SignerPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.Fields(string(mn))) != 24 {
		t.Fatalf("exported mnemonic has %d words", len(strings.Fields(string(mn))))
	}
	seed, _ := hd.MnemonicToSeed(string(mn), "")
	k, _ := hd.DeriveKeyFromPath(hd.CurveSecp256k1, seed, "m/44'/60'/0'/0/0")
	if got, _ := address.Derive("ADDRESS_FORMAT_ETHEREUM", "CURVE_SECP256K1", k.PublicKey()); got != ethAddr {
		t.Fatalf("exported mnemonic derives %s, want %s", got, ethAddr)
	}
	w := root.Query("get_wallet", map[string]any{"walletId": walletID})
	if w.Str("wallet", "exported") != "true" {
		t.Fatalf("wallet not marked exported: %s", w.Raw)
	}
	// Import it under another name: same addresses, imported=true.
	ib := root.Submit("init_import_wallet", "ACTIVITY_TYPE_INIT_IMPORT_WALLET", map[string]any{"userId": created.UserID})
	servertest.MustOK(t, ib)
	enc, err := custody.SealToImportBundle(ib.Str("activity", "result", "initImportWalletResult", "importBundle"), mn, created.OrganizationID, created.UserID, h.Server.PublicKeys().SignerPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	im := root.Submit("import_wallet", "ACTIVITY_TYPE_IMPORT_WALLET", map[string]any{"userId": created.UserID, "walletName": "imported", "encryptedBundle": enc, "accounts": servertest.WalletAccounts[:1]})
	servertest.MustOK(t, im)
	if im.Str("activity", "result", "importWalletResult", "addresses", "0") != ethAddr {
		t.Fatalf("import: %s", im.Raw)
	}
	// The account list and lookups.
	la := root.Query("list_wallet_accounts", map[string]any{"walletId": walletID, "includeWalletDetails": true})
	servertest.MustOK(t, la)
	if n := len(la.Body["accounts"].([]any)); n != 3 || la.Str("accounts", "0", "address") != ethAddr || la.Str("accounts", "1", "walletDetails", "walletName") != "main" {
		t.Fatalf("list_wallet_accounts: %s", la.Raw)
	}
	ga := root.Query("get_wallet_account", map[string]any{"walletId": walletID, "address": solAddr})
	if ga.Str("account", "path") != "m/44'/501'/0'/0'" {
		t.Fatalf("get_wallet_account: %s", ga.Raw)
	}
	// persist:false previews without saving.
	p := root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", map[string]any{"walletId": walletID, "persist": false, "accounts": []any{
		map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/1", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}})
	servertest.MustOK(t, p)
	la = root.Query("list_wallet_accounts", map[string]any{"walletId": walletID})
	if n := len(la.Body["accounts"].([]any)); n != 3 {
		t.Fatalf("persist:false saved an account")
	}
	// Bad curve/format pairs and paths get the documented errors.
	servertest.WantError(t, root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", map[string]any{"walletId": walletID, "accounts": []any{
		map[string]any{"curve": "CURVE_ED25519", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/1", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}), http.StatusBadRequest, 3, "parameters.accounts[0]")
	servertest.WantError(t, root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", map[string]any{"walletId": walletID, "accounts": []any{
		map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/x", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}), http.StatusBadRequest, 3, "invalid path")
	servertest.MustOK(t, root.Submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}}))
}

func TestPrivateKeysAndSubOrgWallet(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	r := root.Submit("create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", map[string]any{"privateKeys": []any{
		map[string]any{"privateKeyName": "hot", "curve": "CURVE_SECP256K1", "privateKeyTags": []string{}, "addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM", "ADDRESS_FORMAT_TRON"}},
	}})
	servertest.MustOK(t, r)
	keyID := r.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "privateKeyId")
	ethAddr := r.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "addresses", "0", "address")
	g := root.Query("get_private_key", map[string]any{"privateKeyId": keyID})
	servertest.MustOK(t, g)
	if g.Str("privateKey", "addresses", "1", "format") != "ADDRESS_FORMAT_TRON" || !strings.HasPrefix(g.Str("privateKey", "addresses", "1", "address"), "T") {
		t.Fatalf("get_private_key: %s", g.Raw)
	}
	d := sha256.Sum256([]byte("x"))
	for _, signWith := range []string{keyID, ethAddr, g.Str("privateKey", "publicKey")} {
		servertest.MustOK(t, root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": signWith,
			"payload": hex.EncodeToString(d[:]), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}))
	}
	tag := root.Submit("create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG", map[string]any{"privateKeyTagName": "hot", "privateKeyIds": []string{keyID}})
	servertest.MustOK(t, tag)
	g = root.Query("get_private_key", map[string]any{"privateKeyId": keyID})
	if g.Str("privateKey", "privateKeyTags", "0") != tag.Str("activity", "result", "createPrivateKeyTagResult", "privateKeyTagId") {
		t.Fatalf("tag not on key: %s", g.Raw)
	}
	recvPriv, recvPub := h.NewKey()
	e := root.Submit("export_private_key", "ACTIVITY_TYPE_EXPORT_PRIVATE_KEY", map[string]any{"privateKeyId": keyID, "targetPublicKey": recvPub})
	servertest.MustOK(t, e)
	raw, err := custody.OpenExportBundle(e.Str("activity", "result", "exportPrivateKeyResult", "exportBundle"), recvPriv, root.Org, h.Server.PublicKeys().SignerPublicKey)
	if err != nil || len(raw) != 32 {
		t.Fatalf("export: %d bytes, %v", len(raw), err)
	}
	k, _ := hd.NewKey(hd.CurveSecp256k1, raw)
	if hex.EncodeToString(k.PublicKey()) != g.Str("privateKey", "publicKey") {
		t.Fatal("exported key does not match")
	}
	servertest.MustOK(t, root.Submit("delete_private_keys", "ACTIVITY_TYPE_DELETE_PRIVATE_KEYS", map[string]any{"privateKeyIds": []string{keyID}}))

	// A sub-organization created with a wallet.
	_, subPub := h.NewKey()
	s := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "with wallet", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "u", "apiKeys": []any{map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}}},
		"wallet":    map[string]any{"walletName": "default", "accounts": servertest.WalletAccounts[:1]},
	})
	servertest.MustOK(t, s)
	if !strings.HasPrefix(s.Str("activity", "result", "createSubOrganizationResultV8", "wallet", "addresses", "0"), "0x") {
		t.Fatalf("sub-org wallet: %s", s.Raw)
	}
	// The parent cannot sign with it.
	subID := s.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	parentInSub := h.Client(subID, root.Priv)
	servertest.WantError(t, parentInSub.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": s.Str("activity", "result", "createSubOrganizationResultV8", "wallet", "addresses", "0"),
		"payload": hex.EncodeToString(d[:]), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusForbidden, 7, "parent organization")
}

func TestAppProofs(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	// core leaves generateAppProofs inside parameters; the envelope member works too.
	r := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "p", "accounts": servertest.WalletAccounts[:2], "generateAppProofs": true})
	servertest.MustOK(t, r)
	proofs := r.Body["activity"].(map[string]any)["appProofs"].([]any)
	if len(proofs) != 2 {
		t.Fatalf("%d app proofs: %s", len(proofs), r.Raw)
	}
	for _, p := range proofs {
		p := p.(map[string]any)
		pub, _ := hex.DecodeString(p["publicKey"].(string))
		sig, _ := hex.DecodeString(p["signature"].(string))
		if len(pub) != 130 || len(sig) != 64 || !strings.Contains(p["proofPayload"].(string), `"APP_PROOF_TYPE_ADDRESS_DERIVATION"`) {
			t.Fatalf("proof shape: %v", p)
		}
		k, err := ecdsaP256(pub[65:])
		if err != nil {
			t.Fatal(err)
		}
		d := sha256.Sum256([]byte(p["proofPayload"].(string)))
		if !verifyRaw(k, d[:], sig) {
			t.Fatal("app proof signature does not verify")
		}
	}
	l := root.Query("list_app_proofs", map[string]any{"activityId": r.Str("activity", "id")})
	servertest.MustOK(t, l)
	if n := len(l.Body["appProofs"].([]any)); n != 2 {
		t.Fatalf("list_app_proofs: %s", l.Raw)
	}
	// Without the flag, none.
	r = root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "q", "accounts": servertest.WalletAccounts[:1]})
	servertest.MustOK(t, r)
	if _, ok := r.Body["activity"].(map[string]any)["appProofs"]; ok {
		t.Fatal("app proofs without the flag")
	}
}
