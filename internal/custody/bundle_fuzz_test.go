package custody

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzOpenImport feeds the import path arbitrary encryptedBundle strings, the client-supplied
// JSON {encappedPublic, ciphertext} of import_wallet and import_private_key (what Latchkey's
// import frame and @turnkey/crypto produce): it never panics, an error never quotes the
// plaintext, and whatever opens (only another spelling of the real bundle can: hex case, a
// compressed encappedPublic, white space) opens to the plaintext that was sealed. The mnemonic
// import on top of it refuses a passphrase and anything but a valid mnemonic.
func FuzzOpenImport(f *testing.F) {
	c := testCustodian(f)
	tb := Binding{OrgID: "org", Kind: "import_target", ID: "u1"}
	ib, sealedTarget, err := c.NewImportTarget(tb, "org", "u1")
	if err != nil {
		f.Fatal(err)
	}
	want := []byte("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about")
	good, err := SealToImportBundle(ib, want, "org", "u1", c.Keys().PublicKey(Signer))
	if err != nil {
		f.Fatal(err)
	}
	var g struct{ EncappedPublic, Ciphertext string }
	if err := json.Unmarshal([]byte(good), &g); err != nil {
		f.Fatal(err)
	}
	enc, _ := hex.DecodeString(g.EncappedPublic)
	bundle := func(e, ct string) string {
		b, _ := json.Marshal(map[string]string{"encappedPublic": e, "ciphertext": ct})
		return string(b)
	}
	f.Add(good)
	f.Add(bundle(hex.EncodeToString(P256Compressed(enc)), g.Ciphertext))
	f.Add(bundle(strings.ToUpper(g.EncappedPublic), g.Ciphertext))
	f.Add(bundle(g.EncappedPublic, g.Ciphertext[:len(g.Ciphertext)-2]))
	f.Add(bundle(g.EncappedPublic[:64], g.Ciphertext))
	f.Add(bundle("04", "00"))
	f.Add(`{"encappedPublic":null,"ciphertext":7}`)
	f.Add(`{}`)
	f.Add(`[]`)
	f.Add(``)
	f.Add(good + good)
	wb := Binding{OrgID: "org", Kind: "wallet", ID: "w"}
	f.Fuzz(func(t *testing.T, s string) {
		plain, err := c.openImport(s, sealedTarget, tb)
		if err != nil {
			if strings.Contains(err.Error(), "abandon") {
				t.Fatalf("an error quotes the plaintext: %v", err)
			}
			return
		}
		if !bytes.Equal(plain, want) {
			t.Fatalf("%q opened to another plaintext", s)
		}
		if _, err := c.ImportMnemonic(s, sealedTarget, tb, wb); err != nil {
			t.Fatalf("the real mnemonic, spelled %q, did not import: %v", s, err)
		}
	})
}

// A wallet with a passphrase appended by Turnkey's separator is refused as such.
func TestImportMnemonicRefusesAPassphrase(t *testing.T) {
	c := testCustodian(t)
	tb := Binding{OrgID: "org", Kind: "import_target", ID: "u1"}
	ib, sealedTarget, err := c.NewImportTarget(tb, "org", "u1")
	if err != nil {
		t.Fatal(err)
	}
	plain := "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about" +
		PassphraseSeparator + "secret words"
	enc, err := SealToImportBundle(ib, []byte(plain), "org", "u1", c.Keys().PublicKey(Signer))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ImportMnemonic(enc, sealedTarget, tb, Binding{OrgID: "org", Kind: "wallet", ID: "w"})
	if !errors.Is(err, ErrWalletPassphrase) || strings.Contains(err.Error(), "secret words") {
		t.Fatalf("err = %v", err)
	}
}
