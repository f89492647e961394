package custody

import (
	"context"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

func testCustodian(t testing.TB) *Custodian {
	t.Helper()
	ctx := context.Background()
	st := openTestStore(t)
	kr, err := OpenKeyring(ctx, st, testMaster(t, 7))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	return NewCustodian(kr, keys)
}

func TestWalletDeriveSignExport(t *testing.T) {
	c := testCustodian(t)
	wb := Binding{OrgID: "org", Kind: "wallet", ID: "w1"}
	if _, err := c.NewMnemonic(13, wb); err == nil {
		t.Fatal("13 words accepted")
	}
	sealed, err := c.NewMnemonic(12, wb)
	if err != nil {
		t.Fatal(err)
	}
	accts, err := c.DeriveAccounts(sealed, wb, []AccountSpec{
		{
			Curve:   "CURVE_SECP256K1",
			Path:    "m/44'/60'/0'/0/0",
			Binding: Binding{OrgID: "org", Kind: "wallet_account", ID: "a1"},
		},
		{
			Curve:   "CURVE_ED25519",
			Path:    "m/44'/501'/0'/0'",
			Binding: Binding{OrgID: "org", Kind: "wallet_account", ID: "a2"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("hello"))
	sig, err := c.Sign(
		accts[0].SealedKey,
		Binding{OrgID: "org", Kind: "wallet_account", ID: "a1"},
		"CURVE_SECP256K1",
		SignECDSA,
		digest[:],
	)
	if err != nil {
		t.Fatal(err)
	}
	compact := append([]byte{27 + 4 + sig.V}, sig.Bytes()...)
	pub, _, err := secpecdsa.RecoverCompact(compact, digest[:])
	if err != nil || hex.EncodeToString(pub.SerializeCompressed()) != hex.EncodeToString(accts[0].PublicKey) {
		t.Fatalf("recovered key does not match: %v", err)
	}
	esig, err := c.Sign(
		accts[1].SealedKey,
		Binding{OrgID: "org", Kind: "wallet_account", ID: "a2"},
		"CURVE_ED25519",
		SignEd25519,
		[]byte("msg"),
	)
	if err != nil || !ed25519.Verify(accts[1].PublicKey, []byte("msg"), esig.Bytes()) {
		t.Fatalf("ed25519 signature does not verify: %v", err)
	}
	// A key sealed for another account does not open.
	if _, err := c.Sign(accts[0].SealedKey, Binding{OrgID: "org", Kind: "wallet_account", ID: "a2"}, "CURVE_SECP256K1", SignECDSA, digest[:]); err == nil {
		t.Fatal("signed with a key moved to another account")
	}

	// Export the mnemonic to a client key and open it as the SDK would.
	recv, _ := ecdh.P256().GenerateKey(rand.Reader)
	bundle, err := c.ExportMnemonic(sealed, wb, "", hex.EncodeToString(recv.PublicKey().Bytes()), "org")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := OpenExportBundle(bundle, hex.EncodeToString(recv.Bytes()), "org", c.Keys().PublicKey(Signer))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(plain))); n != 12 {
		t.Fatalf("exported mnemonic has %d words", n)
	}
	if _, err := OpenExportBundle(bundle, hex.EncodeToString(recv.Bytes()), "other-org", c.Keys().PublicKey(Signer)); err == nil {
		t.Fatal("bundle opened for another organization")
	}
	// Re-import it: the same mnemonic gives the same account.
	tb := Binding{OrgID: "org", Kind: "import_target", ID: "u1"}
	importBundle, sealedTarget, err := c.NewImportTarget(tb, "org", "u1")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := SealToImportBundle(importBundle, plain, "org", "u1", c.Keys().PublicKey(Signer))
	if err != nil {
		t.Fatal(err)
	}
	wb2 := Binding{OrgID: "org", Kind: "wallet", ID: "w2"}
	sealed2, err := c.ImportMnemonic(enc, sealedTarget, tb, wb2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.DeriveAccounts(
		sealed2,
		wb2,
		[]AccountSpec{
			{
				Curve:   "CURVE_SECP256K1",
				Path:    "m/44'/60'/0'/0/0",
				Binding: Binding{OrgID: "org", Kind: "wallet_account", ID: "a3"},
			},
		},
	)
	if err != nil || hex.EncodeToString(again[0].PublicKey) != hex.EncodeToString(accts[0].PublicKey) {
		t.Fatalf("imported mnemonic derives another key: %v", err)
	}
	// Garbage does not import.
	if _, err := c.ImportMnemonic(`{"encappedPublic":"04","ciphertext":"00"}`, sealedTarget, tb, wb2); err == nil {
		t.Fatal("garbage imported")
	}
}
