package address_test

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/custody/hd"
)

// BIP-84 and BIP-86 publish mnemonic -> path -> address vectors; run them end to end through
// the hd package (mnemonic -> seed -> derivation) and Derive.
func TestBIPMnemonicToAddress(t *testing.T) {
	raw, err := os.ReadFile("testdata/bip-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Mnemonic string
		Vectors  []struct {
			Path, Format, PublicKey, InternalKey, Address string
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	seed, err := hd.MnemonicToSeed(file.Mnemonic, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range file.Vectors {
		k, err := hd.DeriveKeyFromPath(hd.CurveSecp256k1, seed, v.Path)
		if err != nil {
			t.Fatal(err)
		}
		pub := k.PublicKey()
		if v.PublicKey != "" && hex.EncodeToString(pub) != v.PublicKey {
			t.Errorf("%s: public key %x, want %s", v.Path, pub, v.PublicKey)
		}
		if v.InternalKey != "" && hex.EncodeToString(pub[1:]) != v.InternalKey {
			t.Errorf("%s: internal key %x, want %s", v.Path, pub[1:], v.InternalKey)
		}
		got, err := address.Derive(v.Format, address.CurveSecp256k1, pub)
		if err != nil || got != v.Address {
			t.Errorf("%s %s: %q, %v; want %q", v.Path, v.Format, got, err, v.Address)
		}
	}
}

// The generator's fixed private keys give, through hd, the public keys the reference
// libraries computed (secp256k1, P-256 and Ed25519 key handling agree).
func TestHDKeysMatchReferenceLibraries(t *testing.T) {
	raw, err := os.ReadFile("testdata/addresses.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Rows []struct{ Curve, Key, PublicKey string }
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, r := range file.Rows {
		secret, _ := hex.DecodeString(r.Key)
		k, err := hd.NewKey(hd.Curve(r.Curve), secret)
		if err != nil {
			t.Fatalf("%s %s: %v", r.Curve, r.Key, err)
		}
		if got := hex.EncodeToString(k.PublicKey()); got != r.PublicKey {
			t.Errorf("%s %s: public key %s, want %s", r.Curve, r.Key, got, r.PublicKey)
		}
		k.Wipe()
	}
}
