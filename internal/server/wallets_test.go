package server

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
)

var testAccounts = []any{
	map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"},
	map[string]any{"curve": "CURVE_ED25519", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/501'/0'/0'", "addressFormat": "ADDRESS_FORMAT_SOLANA"},
	map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/86'/0'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR"},
}

func keccak(b []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	return h.Sum(nil)
}

func TestWalletsSignExportImport(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	r := root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "main", "accounts": testAccounts, "mnemonicLength": 24})
	mustOK(t, r)
	walletID := r.str("activity", "result", "createWalletResult", "walletId")
	ethAddr := r.str("activity", "result", "createWalletResult", "addresses", "0")
	solAddr := r.str("activity", "result", "createWalletResult", "addresses", "1")
	if !strings.HasPrefix(ethAddr, "0x") || len(ethAddr) != 42 || !strings.HasPrefix(r.str("activity", "result", "createWalletResult", "addresses", "2"), "bc1p") {
		t.Fatalf("addresses: %s", r.raw)
	}

	// Sign a digest with the Ethereum account: the signature recovers to its address.
	digest := keccak([]byte("hello"))
	s := root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": strings.ToLower(ethAddr),
		"payload": "0x" + hex.EncodeToString(digest), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	mustOK(t, s)
	res := s.body["activity"].(map[string]any)["result"].(map[string]any)["signRawPayloadResult"].(map[string]any)
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
	mustOK(t, root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": ethAddr,
		"payload": "hello", "encoding": "PAYLOAD_ENCODING_TEXT_UTF8", "hashFunction": "HASH_FUNCTION_KECCAK256"}))
	// Ed25519: NOT_APPLICABLE only, r‖s verifies under the Solana address.
	msg := []byte("solana message bytes")
	wantError(t, root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": solAddr,
		"payload": hex.EncodeToString(msg), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusBadRequest, 3, "HASH_FUNCTION_NOT_APPLICABLE")
	ss := root.submit("sign_raw_payloads", "ACTIVITY_TYPE_SIGN_RAW_PAYLOADS", map[string]any{"signWith": solAddr,
		"payloads": []string{hex.EncodeToString(msg), hex.EncodeToString(msg)}, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NOT_APPLICABLE"})
	mustOK(t, ss)
	sol, _ := base58.Decode(solAddr)
	sig, _ := hex.DecodeString(ss.str("activity", "result", "signRawPayloadsResult", "signatures", "1", "r") + ss.str("activity", "result", "signRawPayloadsResult", "signatures", "1", "s"))
	if !ed25519.Verify(sol, msg, sig) {
		t.Fatal("ed25519 signature does not verify under the Solana address")
	}
	// A NO_OP payload must be a digest; an unknown signWith is a 404.
	wantError(t, root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": ethAddr,
		"payload": "abcd", "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusBadRequest, 3, "32-byte digest")
	wantError(t, root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": "0x0000000000000000000000000000000000000001",
		"payload": hex.EncodeToString(digest), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusNotFound, 5, "parameters.signWith")

	// Unexported wallets are not deleted by accident.
	wantError(t, root.submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}}), http.StatusBadRequest, 9, "not been exported")

	// Export the mnemonic, re-derive locally: the same addresses.
	recvPriv, recvPub := h.newKey()
	e := root.submit("export_wallet", "ACTIVITY_TYPE_EXPORT_WALLET", map[string]any{"walletId": walletID, "targetPublicKey": recvPub})
	mustOK(t, e)
	mn, err := custody.OpenExportBundle(e.str("activity", "result", "exportWalletResult", "exportBundle"), recvPriv, created.OrganizationID, h.s.PublicKeys().SignerPublicKey)
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
	w := root.query("get_wallet", map[string]any{"walletId": walletID})
	if w.str("wallet", "exported") != "true" {
		t.Fatalf("wallet not marked exported: %s", w.raw)
	}
	// Import it under another name: same addresses, imported=true.
	ib := root.submit("init_import_wallet", "ACTIVITY_TYPE_INIT_IMPORT_WALLET", map[string]any{"userId": created.UserID})
	mustOK(t, ib)
	enc, err := custody.SealToImportBundle(ib.str("activity", "result", "initImportWalletResult", "importBundle"), mn, created.OrganizationID, created.UserID, h.s.PublicKeys().SignerPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	im := root.submit("import_wallet", "ACTIVITY_TYPE_IMPORT_WALLET", map[string]any{"userId": created.UserID, "walletName": "imported", "encryptedBundle": enc, "accounts": testAccounts[:1]})
	mustOK(t, im)
	if im.str("activity", "result", "importWalletResult", "addresses", "0") != ethAddr {
		t.Fatalf("import: %s", im.raw)
	}
	// The account list and lookups.
	la := root.query("list_wallet_accounts", map[string]any{"walletId": walletID, "includeWalletDetails": true})
	mustOK(t, la)
	if n := len(la.body["accounts"].([]any)); n != 3 || la.str("accounts", "0", "address") != ethAddr || la.str("accounts", "1", "walletDetails", "walletName") != "main" {
		t.Fatalf("list_wallet_accounts: %s", la.raw)
	}
	ga := root.query("get_wallet_account", map[string]any{"walletId": walletID, "address": solAddr})
	if ga.str("account", "path") != "m/44'/501'/0'/0'" {
		t.Fatalf("get_wallet_account: %s", ga.raw)
	}
	// persist:false previews without saving.
	p := root.submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", map[string]any{"walletId": walletID, "persist": false, "accounts": []any{
		map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/1", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}})
	mustOK(t, p)
	la = root.query("list_wallet_accounts", map[string]any{"walletId": walletID})
	if n := len(la.body["accounts"].([]any)); n != 3 {
		t.Fatalf("persist:false saved an account")
	}
	// Bad curve/format pairs and paths get the documented errors.
	wantError(t, root.submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", map[string]any{"walletId": walletID, "accounts": []any{
		map[string]any{"curve": "CURVE_ED25519", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/1", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}), http.StatusBadRequest, 3, "parameters.accounts[0]")
	wantError(t, root.submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", map[string]any{"walletId": walletID, "accounts": []any{
		map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/x", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}), http.StatusBadRequest, 3, "invalid path")
	mustOK(t, root.submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}}))
}

func TestPrivateKeysAndSubOrgWallet(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	r := root.submit("create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", map[string]any{"privateKeys": []any{
		map[string]any{"privateKeyName": "hot", "curve": "CURVE_SECP256K1", "privateKeyTags": []string{}, "addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM", "ADDRESS_FORMAT_TRON"}},
	}})
	mustOK(t, r)
	keyID := r.str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "privateKeyId")
	ethAddr := r.str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "addresses", "0", "address")
	g := root.query("get_private_key", map[string]any{"privateKeyId": keyID})
	mustOK(t, g)
	if g.str("privateKey", "addresses", "1", "format") != "ADDRESS_FORMAT_TRON" || !strings.HasPrefix(g.str("privateKey", "addresses", "1", "address"), "T") {
		t.Fatalf("get_private_key: %s", g.raw)
	}
	d := sha256.Sum256([]byte("x"))
	for _, signWith := range []string{keyID, ethAddr, g.str("privateKey", "publicKey")} {
		mustOK(t, root.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": signWith,
			"payload": hex.EncodeToString(d[:]), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}))
	}
	tag := root.submit("create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG", map[string]any{"privateKeyTagName": "hot", "privateKeyIds": []string{keyID}})
	mustOK(t, tag)
	g = root.query("get_private_key", map[string]any{"privateKeyId": keyID})
	if g.str("privateKey", "privateKeyTags", "0") != tag.str("activity", "result", "createPrivateKeyTagResult", "privateKeyTagId") {
		t.Fatalf("tag not on key: %s", g.raw)
	}
	recvPriv, recvPub := h.newKey()
	e := root.submit("export_private_key", "ACTIVITY_TYPE_EXPORT_PRIVATE_KEY", map[string]any{"privateKeyId": keyID, "targetPublicKey": recvPub})
	mustOK(t, e)
	raw, err := custody.OpenExportBundle(e.str("activity", "result", "exportPrivateKeyResult", "exportBundle"), recvPriv, root.org, h.s.PublicKeys().SignerPublicKey)
	if err != nil || len(raw) != 32 {
		t.Fatalf("export: %d bytes, %v", len(raw), err)
	}
	k, _ := hd.NewKey(hd.CurveSecp256k1, raw)
	if hex.EncodeToString(k.PublicKey()) != g.str("privateKey", "publicKey") {
		t.Fatal("exported key does not match")
	}
	mustOK(t, root.submit("delete_private_keys", "ACTIVITY_TYPE_DELETE_PRIVATE_KEYS", map[string]any{"privateKeyIds": []string{keyID}}))

	// A sub-organization created with a wallet.
	_, subPub := h.newKey()
	s := root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "with wallet", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "u", "apiKeys": []any{map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}}},
		"wallet":    map[string]any{"walletName": "default", "accounts": testAccounts[:1]},
	})
	mustOK(t, s)
	if !strings.HasPrefix(s.str("activity", "result", "createSubOrganizationResultV8", "wallet", "addresses", "0"), "0x") {
		t.Fatalf("sub-org wallet: %s", s.raw)
	}
	// The parent cannot sign with it.
	subID := s.str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	parentInSub := h.client(subID, root.priv)
	wantError(t, parentInSub.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": s.str("activity", "result", "createSubOrganizationResultV8", "wallet", "addresses", "0"),
		"payload": hex.EncodeToString(d[:]), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}), http.StatusForbidden, 7, "parent organization")
}

func TestAppProofs(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	// core leaves generateAppProofs inside parameters; the envelope member works too.
	r := root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "p", "accounts": testAccounts[:2], "generateAppProofs": true})
	mustOK(t, r)
	proofs := r.body["activity"].(map[string]any)["appProofs"].([]any)
	if len(proofs) != 2 {
		t.Fatalf("%d app proofs: %s", len(proofs), r.raw)
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
	l := root.query("list_app_proofs", map[string]any{"activityId": r.str("activity", "id")})
	mustOK(t, l)
	if n := len(l.body["appProofs"].([]any)); n != 2 {
		t.Fatalf("list_app_proofs: %s", l.raw)
	}
	// Without the flag, none.
	r = root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "q", "accounts": testAccounts[:1]})
	mustOK(t, r)
	if _, ok := r.body["activity"].(map[string]any)["appProofs"]; ok {
		t.Fatal("app proofs without the flag")
	}
}
