package custody

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// Signing opens one sealed account key and signs: no PBKDF2, no path derivation.
func BenchmarkSignSealed(b *testing.B) {
	for _, tc := range []struct {
		name, curve, path string
		kind              SignKind
	}{
		{"secp256k1", "CURVE_SECP256K1", "m/44'/60'/0'/0/0", SignECDSA},
		{"ed25519", "CURVE_ED25519", "m/44'/501'/0'/0'", SignEd25519},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := testCustodian(&testing.T{})
			wb := Binding{OrgID: "o", Kind: "wallet", ID: "w"}
			sealed, _ := c.NewMnemonic(12, wb)
			ab := Binding{OrgID: "o", Kind: "wallet_account", ID: "a"}
			d, err := c.DeriveAccounts(sealed, wb, []AccountSpec{{Curve: tc.curve, Path: tc.path, Binding: ab}})
			if err != nil {
				b.Fatal(err)
			}
			msg := make([]byte, 32)
			for b.Loop() {
				if _, err := c.Sign(d[0].SealedKey, ab, tc.curve, tc.kind, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Creating a wallet account from a sealed mnemonic: PBKDF2 + derivation + sealing, paid once.
func BenchmarkDeriveAccount(b *testing.B) {
	c := testCustodian(&testing.T{})
	wb := Binding{OrgID: "o", Kind: "wallet", ID: "w"}
	sealed, _ := c.NewMnemonic(12, wb)
	for b.Loop() {
		if _, err := c.DeriveAccounts(sealed, wb, []AccountSpec{{Curve: "CURVE_SECP256K1", Path: "m/44'/60'/0'/0/0", Binding: Binding{OrgID: "o", Kind: "wallet_account", ID: "a"}}}); err != nil {
			b.Fatal(err)
		}
	}
}

// Export: open the sealed key, HPKE-seal it to the client, sign the envelope.
func BenchmarkExportKey(b *testing.B) {
	c := testCustodian(&testing.T{})
	kb := Binding{OrgID: "o", Kind: "private_key", ID: "k"}
	k, _ := c.NewPrivateKey("CURVE_SECP256K1", kb)
	recv, _ := ecdh.P256().GenerateKey(rand.Reader)
	target := hex.EncodeToString(recv.PublicKey().Bytes())
	for b.Loop() {
		if _, err := c.ExportKey(k.SealedKey, kb, target, "o"); err != nil {
			b.Fatal(err)
		}
	}
}
