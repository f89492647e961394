package wallets_test

import (
	stdecdsa "crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

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
	r := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts, "mnemonicLength": 24},
	)
	servertest.MustOK(t, r)
	walletID := r.Str("activity", "result", "createWalletResult", "walletId")
	ethAddr := r.Str("activity", "result", "createWalletResult", "addresses", "0")
	solAddr := r.Str("activity", "result", "createWalletResult", "addresses", "1")
	if !strings.HasPrefix(ethAddr, "0x") || len(ethAddr) != 42 ||
		!strings.HasPrefix(r.Str("activity", "result", "createWalletResult", "addresses", "2"), "bc1p") {
		t.Fatalf("addresses: %s", r.Raw)
	}

	// Sign a digest with the Ethereum account: the signature recovers to its address.
	digest := keccak([]byte("hello"))
	s := root.Submit(
		"sign_raw_payload",
		"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
		map[string]any{"signWith": strings.ToLower(ethAddr),
			"payload": "0x" + hex.EncodeToString(
				digest,
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
	)
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
	servertest.MustOK(
		t,
		root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": ethAddr,
			"payload": "hello", "encoding": "PAYLOAD_ENCODING_TEXT_UTF8", "hashFunction": "HASH_FUNCTION_KECCAK256"}),
	)
	// Ed25519: NOT_APPLICABLE only, r‖s verifies under the Solana address.
	msg := []byte("solana message bytes")
	servertest.WantError(
		t,
		root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": solAddr,
			"payload": hex.EncodeToString(
				msg,
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}),
		http.StatusBadRequest,
		3,
		"HASH_FUNCTION_NOT_APPLICABLE",
	)
	ss := root.Submit("sign_raw_payloads", "ACTIVITY_TYPE_SIGN_RAW_PAYLOADS", map[string]any{"signWith": solAddr,
		"payloads": []string{
			hex.EncodeToString(msg),
			hex.EncodeToString(msg),
		}, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NOT_APPLICABLE"})
	servertest.MustOK(t, ss)
	sol, _ := base58.Decode(solAddr)
	sig, _ := hex.DecodeString(
		ss.Str(
			"activity",
			"result",
			"signRawPayloadsResult",
			"signatures",
			"1",
			"r",
		) + ss.Str(
			"activity",
			"result",
			"signRawPayloadsResult",
			"signatures",
			"1",
			"s",
		),
	)
	if !ed25519.Verify(sol, msg, sig) {
		t.Fatal("ed25519 signature does not verify under the Solana address")
	}
	// A NO_OP payload must be a digest; an unknown signWith is a 404.
	servertest.WantError(
		t,
		root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": ethAddr,
			"payload": "abcd", "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}),
		http.StatusBadRequest,
		3,
		"32-byte digest",
	)
	servertest.WantError(
		t,
		root.Submit(
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{"signWith": "0x0000000000000000000000000000000000000001",
				"payload": hex.EncodeToString(
					digest,
				), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
		),
		http.StatusNotFound,
		5,
		"parameters.signWith",
	)

	// Unexported wallets are not deleted by accident.
	servertest.WantError(
		t,
		root.Submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}}),
		http.StatusBadRequest,
		9,
		"not been exported",
	)

	// Export the mnemonic, re-derive locally: the same addresses.
	recvPriv, recvPub := h.NewKey()
	e := root.Submit(
		"export_wallet",
		"ACTIVITY_TYPE_EXPORT_WALLET",
		map[string]any{"walletId": walletID, "targetPublicKey": recvPub},
	)
	servertest.MustOK(t, e)
	mn, err := custody.OpenExportBundle(
		e.Str("activity", "result", "exportWalletResult", "exportBundle"),
		recvPriv,
		created.OrganizationID,
		h.Server.PublicKeys().SignerPublicKey,
	)
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
	ib := root.Submit(
		"init_import_wallet",
		"ACTIVITY_TYPE_INIT_IMPORT_WALLET",
		map[string]any{"userId": created.UserID},
	)
	servertest.MustOK(t, ib)
	enc, err := custody.SealToImportBundle(
		ib.Str("activity", "result", "initImportWalletResult", "importBundle"),
		mn,
		created.OrganizationID,
		created.UserID,
		h.Server.PublicKeys().SignerPublicKey,
	)
	if err != nil {
		t.Fatal(err)
	}
	im := root.Submit(
		"import_wallet",
		"ACTIVITY_TYPE_IMPORT_WALLET",
		map[string]any{
			"userId":          created.UserID,
			"walletName":      "imported",
			"encryptedBundle": enc,
			"accounts":        servertest.WalletAccounts[:1],
		},
	)
	servertest.MustOK(t, im)
	if im.Str("activity", "result", "importWalletResult", "addresses", "0") != ethAddr {
		t.Fatalf("import: %s", im.Raw)
	}
	// The account list and lookups.
	la := root.Query("list_wallet_accounts", map[string]any{"walletId": walletID, "includeWalletDetails": true})
	servertest.MustOK(t, la)
	if n := len(la.Body["accounts"].([]any)); n != 3 || la.Str("accounts", "0", "address") != ethAddr ||
		la.Str("accounts", "1", "walletDetails", "walletName") != "main" {
		t.Fatalf("list_wallet_accounts: %s", la.Raw)
	}
	ga := root.Query("get_wallet_account", map[string]any{"walletId": walletID, "address": solAddr})
	if ga.Str("account", "path") != "m/44'/501'/0'/0'" {
		t.Fatalf("get_wallet_account: %s", ga.Raw)
	}
	// persist:false previews without saving.
	p := root.Submit(
		"create_wallet_accounts",
		"ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
		map[string]any{"walletId": walletID, "persist": false, "accounts": []any{
			map[string]any{
				"curve":         "CURVE_SECP256K1",
				"pathFormat":    "PATH_FORMAT_BIP32",
				"path":          "m/44'/60'/0'/0/1",
				"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
			}}},
	)
	servertest.MustOK(t, p)
	la = root.Query("list_wallet_accounts", map[string]any{"walletId": walletID})
	if n := len(la.Body["accounts"].([]any)); n != 3 {
		t.Fatalf("persist:false saved an account")
	}
	// Bad curve/format pairs and paths get the documented errors.
	servertest.WantError(
		t,
		root.Submit(
			"create_wallet_accounts",
			"ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
			map[string]any{"walletId": walletID, "accounts": []any{
				map[string]any{
					"curve":         "CURVE_ED25519",
					"pathFormat":    "PATH_FORMAT_BIP32",
					"path":          "m/44'/60'/0'/0/1",
					"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
				}}},
		),
		http.StatusBadRequest,
		3,
		"parameters.accounts[0]",
	)
	servertest.WantError(
		t,
		root.Submit(
			"create_wallet_accounts",
			"ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
			map[string]any{"walletId": walletID, "accounts": []any{
				map[string]any{
					"curve":         "CURVE_SECP256K1",
					"pathFormat":    "PATH_FORMAT_BIP32",
					"path":          "m/44'/x",
					"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
				}}},
		),
		http.StatusBadRequest,
		3,
		"invalid path",
	)
	servertest.MustOK(
		t,
		root.Submit("delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{walletID}}),
	)
}

func TestPrivateKeysAndSubOrgWallet(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	r := root.Submit("create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", map[string]any{"privateKeys": []any{
		map[string]any{
			"privateKeyName": "hot",
			"curve":          "CURVE_SECP256K1",
			"privateKeyTags": []string{},
			"addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM", "ADDRESS_FORMAT_TRON"},
		},
	}})
	servertest.MustOK(t, r)
	keyID := r.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "privateKeyId")
	ethAddr := r.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "addresses", "0", "address")
	g := root.Query("get_private_key", map[string]any{"privateKeyId": keyID})
	servertest.MustOK(t, g)
	if g.Str("privateKey", "addresses", "1", "format") != "ADDRESS_FORMAT_TRON" ||
		!strings.HasPrefix(g.Str("privateKey", "addresses", "1", "address"), "T") {
		t.Fatalf("get_private_key: %s", g.Raw)
	}
	d := sha256.Sum256([]byte("x"))
	for _, signWith := range []string{keyID, ethAddr, g.Str("privateKey", "publicKey")} {
		servertest.MustOK(
			t,
			root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": signWith,
				"payload": hex.EncodeToString(
					d[:],
				), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}),
		)
	}
	tag := root.Submit(
		"create_private_key_tag",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
		map[string]any{"privateKeyTagName": "hot", "privateKeyIds": []string{keyID}},
	)
	servertest.MustOK(t, tag)
	g = root.Query("get_private_key", map[string]any{"privateKeyId": keyID})
	if g.Str(
		"privateKey",
		"privateKeyTags",
		"0",
	) != tag.Str(
		"activity",
		"result",
		"createPrivateKeyTagResult",
		"privateKeyTagId",
	) {
		t.Fatalf("tag not on key: %s", g.Raw)
	}
	recvPriv, recvPub := h.NewKey()
	e := root.Submit(
		"export_private_key",
		"ACTIVITY_TYPE_EXPORT_PRIVATE_KEY",
		map[string]any{"privateKeyId": keyID, "targetPublicKey": recvPub},
	)
	servertest.MustOK(t, e)
	raw, err := custody.OpenExportBundle(
		e.Str("activity", "result", "exportPrivateKeyResult", "exportBundle"),
		recvPriv,
		root.Org,
		h.Server.PublicKeys().SignerPublicKey,
	)
	if err != nil || len(raw) != 32 {
		t.Fatalf("export: %d bytes, %v", len(raw), err)
	}
	k, _ := hd.NewKey(hd.CurveSecp256k1, raw)
	if hex.EncodeToString(k.PublicKey()) != g.Str("privateKey", "publicKey") {
		t.Fatal("exported key does not match")
	}
	servertest.MustOK(
		t,
		root.Submit(
			"delete_private_keys",
			"ACTIVITY_TYPE_DELETE_PRIVATE_KEYS",
			map[string]any{"privateKeyIds": []string{keyID}},
		),
	)

	// A sub-organization created with a wallet.
	_, subPub := h.NewKey()
	s := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "with wallet", "rootQuorumThreshold": 1,
		"rootUsers": []any{
			map[string]any{
				"userName": "u",
				"apiKeys": []any{
					map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"},
				},
				"authenticators": []any{},
				"oauthProviders": []any{},
			},
		},
		"wallet": map[string]any{"walletName": "default", "accounts": servertest.WalletAccounts[:1]},
	})
	servertest.MustOK(t, s)
	if !strings.HasPrefix(
		s.Str("activity", "result", "createSubOrganizationResultV8", "wallet", "addresses", "0"),
		"0x",
	) {
		t.Fatalf("sub-org wallet: %s", s.Raw)
	}
	// The parent cannot sign with it.
	subID := s.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	parentInSub := h.Client(subID, root.Priv)
	servertest.WantError(
		t,
		parentInSub.Submit(
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{
				"signWith": s.Str("activity", "result", "createSubOrganizationResultV8", "wallet", "addresses", "0"),
				"payload": hex.EncodeToString(
					d[:],
				),
				"encoding":     "PAYLOAD_ENCODING_HEXADECIMAL",
				"hashFunction": "HASH_FUNCTION_NO_OP",
			},
		),
		http.StatusForbidden,
		7,
		"parent organization",
	)
}

func TestAppProofs(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	// core leaves generateAppProofs inside parameters; the envelope member works too.
	r := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "p", "accounts": servertest.WalletAccounts[:2], "generateAppProofs": true},
	)
	servertest.MustOK(t, r)
	proofs := r.Body["activity"].(map[string]any)["appProofs"].([]any)
	if len(proofs) != 2 {
		t.Fatalf("%d app proofs: %s", len(proofs), r.Raw)
	}
	for _, p := range proofs {
		p := p.(map[string]any)
		pub, _ := hex.DecodeString(p["publicKey"].(string))
		sig, _ := hex.DecodeString(p["signature"].(string))
		if len(pub) != 130 || len(sig) != 64 ||
			!strings.Contains(p["proofPayload"].(string), `"APP_PROOF_TYPE_ADDRESS_DERIVATION"`) {
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
	r = root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "q", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, r)
	if _, ok := r.Body["activity"].(map[string]any)["appProofs"]; ok {
		t.Fatal("app proofs without the flag")
	}
}

// tkcli's `turnkey ethereum tx` sends ACTIVITY_TYPE_SIGN_TRANSACTION (the V1 type) with V2
// parameters (signWith, type, unsignedTransaction; its go-openapi models in that order), and
// Turnkey signs it: the gateway reads parameters by the path's request message. Latchkey does the
// same: parameters invalid for the named version but valid for the path's current one are taken
// as that version. The V1 body (privateKeyId) still works as V1.
func TestTkcliSignTransactionV1TypeWithV2Parameters(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	body := fmt.Sprintf(
		`{"organizationId":%q,"parameters":{"signWith":%q,"type":"TRANSACTION_TYPE_ETHEREUM","unsignedTransaction":%q},"timestampMs":"%d","type":"ACTIVITY_TYPE_SIGN_TRANSACTION"}`,
		created.OrganizationID,
		addr,
		servertest.UnsignedEthTx("0x1111111111111111111111111111111111111111"),
		h.Now().UnixMilli(),
	)
	r := root.Post("/public/v1/submit/sign_transaction", []byte(body))
	servertest.MustOK(t, r)
	if signed := r.Str("activity", "result", "signTransactionResult", "signedTransaction"); !strings.HasPrefix(
		signed,
		"02",
	) &&
		!strings.HasPrefix(signed, "0x02") {
		t.Fatalf("signed transaction %q: %s", signed, r.Raw)
	}
	if r.Str("activity", "type") != "ACTIVITY_TYPE_SIGN_TRANSACTION_V2" ||
		r.Str("activity", "intent", "signTransactionIntentV2", "signWith") != addr {
		t.Fatalf("recorded as: %s", r.Raw)
	}
	// Parameters valid for neither version are refused naming the named version's field.
	h.Advance(1)
	bad := fmt.Sprintf(
		`{"organizationId":%q,"parameters":{"type":"TRANSACTION_TYPE_ETHEREUM"},"timestampMs":"%d","type":"ACTIVITY_TYPE_SIGN_TRANSACTION"}`,
		created.OrganizationID,
		h.Now().UnixMilli(),
	)
	servertest.WantError(
		t,
		root.Post("/public/v1/submit/sign_transaction", []byte(bad)),
		400,
		3,
		"parameters.privateKeyId is required",
	)
}

// go-sdk's wallets example (examples/wallets/create_wallet_accounts) adds an Ethereum account at
// m/44'/60'/0'/0/0; its README says Turnkey answers an error when the wallet already has an
// account there, and to pick an unused path. Latchkey refuses the same way (409, naming the path
// and format) and creates the account at a new path.
func TestCreateWalletAccountsAtATakenPath(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
	)
	servertest.MustOK(t, w)
	walletID := w.Str("activity", "result", "createWalletResult", "walletId")
	account := func(path string) map[string]any {
		return map[string]any{
			"walletId": walletID,
			"accounts": []any{map[string]any{"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
				"curve": "CURVE_SECP256K1", "path": path, "pathFormat": "PATH_FORMAT_BIP32"}},
		}
	}
	h.Advance(1)
	r := root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", account("m/44'/60'/0'/0/0"))
	if r.Status != 409 || !strings.Contains(r.Str("message"), "m/44'/60'/0'/0/0") {
		t.Fatalf("a second account at a taken path: %d %s", r.Status, r.Raw)
	}
	h.Advance(1)
	servertest.MustOK(
		t,
		root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS", account("m/44'/60'/0'/0/1")),
	)
}

func ecdsaP256(uncompressed []byte) (*stdecdsa.PublicKey, error) {
	return stdecdsa.ParseUncompressedPublicKey(elliptic.P256(), uncompressed)
}

func verifyRaw(k *stdecdsa.PublicKey, digest, sig []byte) bool {
	return stdecdsa.Verify(k, digest, new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}

// The wallet and private key operations the tests above do not reach: rename, list, per-account
// export and deletion, private key import, and private key tags.
func TestWalletAndKeyLifecycle(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	w := root.MustSubmit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:2]},
	)
	walletID := w.Result("createWalletResult", "walletId")
	ethAddr := w.Result("createWalletResult", "addresses", "0")

	root.MustSubmit(
		"update_wallet",
		"ACTIVITY_TYPE_UPDATE_WALLET",
		map[string]any{"walletId": walletID, "walletName": "renamed"},
	)
	if l := root.MustQuery("list_wallets", nil); l.Len("wallets") != 1 ||
		l.Str("wallets", "0", "walletName") != "renamed" {
		t.Fatalf("list_wallets after update_wallet: %s", l.Raw)
	}

	// An account is exported alone: the bundle holds the account's private key, and the account
	// (not the wallet) may then be deleted without deleteWithoutExport.
	recvPriv, recvPub := h.NewKey()
	e := root.MustSubmit(
		"export_wallet_account",
		"ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT",
		map[string]any{"address": ethAddr, "targetPublicKey": recvPub},
	)
	raw, err := custody.OpenExportBundle(
		e.Result("exportWalletAccountResult", "exportBundle"),
		recvPriv,
		created.OrganizationID,
		h.Server.PublicKeys().SignerPublicKey,
	)
	if err != nil || len(raw) != 32 {
		t.Fatalf("export_wallet_account: %d bytes, %v", len(raw), err)
	}
	accts := root.MustQuery("list_wallet_accounts", map[string]any{"walletId": walletID})
	ethID, solID := accts.Str("accounts", "0", "walletAccountId"), accts.Str("accounts", "1", "walletAccountId")
	servertest.WantError(
		t,
		root.Submit(
			"delete_wallet_accounts",
			"ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS",
			map[string]any{"walletAccountIds": []string{solID}},
		),
		http.StatusBadRequest,
		9,
		"parameters.walletAccountIds[0]",
	)
	root.MustSubmit(
		"delete_wallet_accounts",
		"ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS",
		map[string]any{"walletAccountIds": []string{ethID}},
	)
	if l := root.MustQuery("list_wallet_accounts", map[string]any{"walletId": walletID}); l.Len("accounts") != 1 {
		t.Fatalf("list_wallet_accounts after delete_wallet_accounts: %s", l.Raw)
	}

	// The exported account key imported as a private key has the account's address.
	ib := root.MustSubmit(
		"init_import_private_key",
		"ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY",
		map[string]any{"userId": created.UserID},
	)
	enc, err := custody.SealToImportBundle(
		ib.Result("initImportPrivateKeyResult", "importBundle"),
		raw,
		created.OrganizationID,
		created.UserID,
		h.Server.PublicKeys().SignerPublicKey,
	)
	if err != nil {
		t.Fatal(err)
	}
	im := root.MustSubmit(
		"import_private_key",
		"ACTIVITY_TYPE_IMPORT_PRIVATE_KEY",
		map[string]any{"userId": created.UserID, "privateKeyName": "imported",
			"encryptedBundle": enc, "curve": "CURVE_SECP256K1", "addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM"}},
	)
	keyID := im.Result("importPrivateKeyResult", "privateKeyId")
	if got := im.Result("importPrivateKeyResult", "addresses", "0", "address"); !strings.EqualFold(got, ethAddr) {
		t.Fatalf("imported key's address %s, want %s", got, ethAddr)
	}
	// The import target is used up.
	servertest.WantError(
		t,
		root.Submit(
			"import_private_key",
			"ACTIVITY_TYPE_IMPORT_PRIVATE_KEY",
			map[string]any{"userId": created.UserID, "privateKeyName": "again",
				"encryptedBundle": enc, "curve": "CURVE_SECP256K1", "addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM"}},
		),
		http.StatusBadRequest,
		9,
		"call init_import_private_key first",
	)

	// Private key tags: create, rename and move members, list, delete.
	tag := root.MustSubmit(
		"create_private_key_tag",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
		map[string]any{"privateKeyTagName": "cold", "privateKeyIds": []string{}},
	)
	tagID := tag.Result("createPrivateKeyTagResult", "privateKeyTagId")
	root.MustSubmit(
		"update_private_key_tag",
		"ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG",
		map[string]any{"privateKeyTagId": tagID, "newPrivateKeyTagName": "warm",
			"addPrivateKeyIds": []string{keyID}, "removePrivateKeyIds": []string{}},
	)
	if l := root.MustQuery("list_private_key_tags", nil); l.Len("privateKeyTags") != 1 ||
		l.Str("privateKeyTags", "0", "tagName") != "warm" {
		t.Fatalf("list_private_key_tags: %s", l.Raw)
	}
	if l := root.MustQuery("list_private_keys", nil); l.Len("privateKeys") != 1 ||
		l.Str("privateKeys", "0", "privateKeyTags", "0") != tagID {
		t.Fatalf("list_private_keys: %s", l.Raw)
	}
	servertest.WantError(
		t,
		root.Submit(
			"update_private_key_tag",
			"ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG",
			map[string]any{"privateKeyTagId": tagID,
				"addPrivateKeyIds": []string{
					"no-such-key",
				}, "removePrivateKeyIds": []string{}},
		),
		http.StatusBadRequest,
		3,
		"parameters.addPrivateKeyIds",
	)
	root.MustSubmit(
		"delete_private_key_tags",
		"ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS",
		map[string]any{"privateKeyTagIds": []string{tagID}},
	)
	if l := root.MustQuery("list_private_key_tags", nil); l.Len("privateKeyTags") != 0 {
		t.Fatalf("tag not deleted: %s", l.Raw)
	}
}

// Bad wallet parameters are refused with a 400 naming the field, and nothing is created.
func TestWalletRefusals(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	eth := servertest.WalletAccounts[0]
	for _, tc := range []struct {
		name, op, typ string
		params        map[string]any
		field         string
	}{
		{"no wallet name", "create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "", "accounts": []any{eth}}, "parameters.walletName"},
		{"bad mnemonic length", "create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": []any{eth}, "mnemonicLength": 13}, "parameters.mnemonicLength"},
		{"unknown curve", "create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": []any{map[string]any{
			"curve": "CURVE_P384", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}, "parameters.accounts[0].curve"},
		{"no wallets to delete", "delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS", map[string]any{"walletIds": []string{}}, "parameters.walletIds"},
		{"no accounts to delete", "delete_wallet_accounts", "ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS", map[string]any{"walletAccountIds": []string{}}, "parameters.walletAccountIds"},
		{"private key without a name", "create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", map[string]any{"privateKeys": []any{
			map[string]any{"privateKeyName": "", "curve": "CURVE_SECP256K1", "privateKeyTags": []string{}, "addressFormats": []string{}}}}, "parameters.privateKeys[0].privateKeyName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			servertest.WantError(t, root.Submit(tc.op, tc.typ, tc.params), http.StatusBadRequest, 3, tc.field)
		})
	}
	if l := root.MustQuery("list_wallets", nil); l.Len("wallets") != 0 {
		t.Fatalf("a refused create_wallet left a wallet: %s", l.Raw)
	}
}

// The same create_wallet bytes sent twice are one activity and one wallet; a wallet belongs to
// its organization only: another organization's key cannot read it, nor name it from its own.
func TestWalletIdempotencyAndOwnership(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	first := root.SubmitTwice(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "once", "accounts": servertest.WalletAccounts[:1]},
	)
	if l := root.MustQuery("list_wallets", nil); l.Len("wallets") != 1 {
		t.Fatalf("%d wallets after a resubmission: %s", l.Len("wallets"), l.Raw)
	}
	walletID := first.Result("createWalletResult", "walletId")
	addr := first.Result("createWalletResult", "addresses", "0")

	other, _ := h.RootOrg("Other")
	servertest.WantError(
		t,
		h.Client(root.Org, other.Priv).Query("get_wallet", map[string]any{"walletId": walletID}),
		http.StatusUnauthorized,
		16,
		"could not find public key",
	)
	servertest.WantError(
		t,
		other.Query("get_wallet", map[string]any{"walletId": walletID}),
		http.StatusNotFound,
		5,
		"wallet",
	)
	d := sha256.Sum256([]byte("x"))
	servertest.WantError(
		t,
		other.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr,
			"payload": hex.EncodeToString(
				d[:],
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}),
		http.StatusNotFound,
		5,
		"parameters.signWith",
	)
	servertest.WantError(
		t,
		other.Submit(
			"update_wallet",
			"ACTIVITY_TYPE_UPDATE_WALLET",
			map[string]any{"walletId": walletID, "walletName": "mine"},
		),
		http.StatusNotFound,
		5,
		"wallet",
	)
}

// What a policy sees of the key an activity uses: wallet.label and wallet.exported for a wallet
// account, private_key.label and private_key.tags for a private key, for signing and for
// exports alike.
func TestPolicyEnvironmentOfKeys(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	bobID, bob := h.NewUser(root, "bob", "bob@example.com")
	main := root.MustSubmit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:1]},
	)
	side := root.MustSubmit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "side", "accounts": servertest.WalletAccounts[:1]},
	)
	keys := root.MustSubmit(
		"create_private_keys",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2",
		map[string]any{"privateKeys": []any{
			map[string]any{
				"privateKeyName": "hot",
				"curve":          "CURVE_SECP256K1",
				"privateKeyTags": []string{},
				"addressFormats": []string{},
			},
			map[string]any{
				"privateKeyName": "cold",
				"curve":          "CURVE_SECP256K1",
				"privateKeyTags": []string{},
				"addressFormats": []string{},
			}}},
	)
	hot, cold := keys.Result(
		"createPrivateKeysResultV2",
		"privateKeys",
		"0",
		"privateKeyId",
	), keys.Result(
		"createPrivateKeysResultV2",
		"privateKeys",
		"1",
		"privateKeyId",
	)
	tagID := root.MustSubmit("create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG", map[string]any{"privateKeyTagName": "ops", "privateKeyIds": []string{cold}}).
		Result("createPrivateKeyTagResult", "privateKeyTagId")
	allow := func(name, condition string) {
		h.Advance(time.Millisecond)
		root.MustSubmit(
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{"policyName": name, "effect": "EFFECT_ALLOW",
				"consensus": "approvers.any(user, user.id == '" + bobID + "')", "condition": condition, "notes": ""},
		)
	}
	allow("sign with main", "activity.action == 'SIGN' && wallet.label == 'main' && wallet.exported == false")
	allow("sign with tagged keys", "activity.action == 'SIGN' && private_key.tags.contains('"+tagID+"')")
	allow("export hot", "activity.action == 'EXPORT' && private_key.label == 'hot'")

	d := sha256.Sum256([]byte("policy"))
	sign := func(signWith string) servertest.Response {
		h.Advance(time.Millisecond)
		return bob.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": signWith,
			"payload": hex.EncodeToString(
				d[:],
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	}
	servertest.MustOK(t, sign(main.Result("createWalletResult", "addresses", "0")))
	servertest.WantError(
		t,
		sign(side.Result("createWalletResult", "addresses", "0")),
		http.StatusForbidden,
		7,
		"denied",
	)
	servertest.MustOK(t, sign(cold))
	servertest.WantError(t, sign(hot), http.StatusForbidden, 7, "denied")

	_, recvPub := h.NewKey()
	export := func(keyID string) servertest.Response {
		h.Advance(time.Millisecond)
		return bob.Submit(
			"export_private_key",
			"ACTIVITY_TYPE_EXPORT_PRIVATE_KEY",
			map[string]any{"privateKeyId": keyID, "targetPublicKey": recvPub},
		)
	}
	servertest.MustOK(t, export(hot))
	servertest.WantError(t, export(cold), http.StatusForbidden, 7, "denied")
}

// A wallet import carrying a passphrase the way Turnkey's import frame appends one
// ("<mnemonic>\n--PASS--\n<passphrase>") is refused with a 400 saying passphrases are not
// supported, not as an invalid mnemonic, and the passphrase is not repeated; the import can be
// made again without it.
func TestImportWalletRefusesAPassphrase(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	const mnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
	importWith := func(plaintext string) servertest.Response {
		h.Advance(time.Millisecond)
		ib := root.MustSubmit("init_import_wallet", "ACTIVITY_TYPE_INIT_IMPORT_WALLET",
			map[string]any{"userId": created.UserID})
		enc, err := custody.SealToImportBundle(ib.Result("initImportWalletResult", "importBundle"), []byte(plaintext),
			created.OrganizationID, created.UserID, h.Server.PublicKeys().SignerPublicKey)
		if err != nil {
			t.Fatal(err)
		}
		return root.Submit("import_wallet", "ACTIVITY_TYPE_IMPORT_WALLET", map[string]any{"userId": created.UserID,
			"walletName": "imported", "encryptedBundle": enc, "accounts": servertest.WalletAccounts[:1]})
	}
	r := importWith(mnemonic + custody.PassphraseSeparator + "correct horse battery staple")
	servertest.WantError(t, r, http.StatusBadRequest, 3, "wallet passphrases are not supported")
	if strings.Contains(string(r.Raw), "horse") || strings.Contains(string(r.Raw), "abandon") {
		t.Fatalf("the refusal repeats the secret: %s", r.Raw)
	}
	if l := root.MustQuery("list_wallets", nil); l.Len("wallets") != 0 {
		t.Fatalf("a refused import left a wallet: %s", l.Raw)
	}
	servertest.MustOK(t, importWith(mnemonic))
}
