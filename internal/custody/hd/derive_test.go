package hd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/mr-tron/base58"
)

// decodeXprv returns the chain code and private key of a base58check xprv.
func decodeXprv(t testing.TB, s string) (chain, key []byte) {
	t.Helper()
	raw, err := base58.Decode(s)
	if err != nil || len(raw) != 82 {
		t.Fatalf("bad xprv %q: %v", s, err)
	}
	sum := sha256.Sum256(raw[:78])
	sum = sha256.Sum256(sum[:])
	if !bytes.Equal(sum[:4], raw[78:]) || raw[45] != 0 {
		t.Fatalf("bad xprv checksum or key prefix %q", s)
	}
	return raw[13:45], raw[46:78]
}

func TestBIP32Vectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/bip32-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Vector           int
			Seed, Path, Xprv string
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) != 17 {
		t.Fatalf("%d vectors, want 17", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		seed, _ := hex.DecodeString(v.Seed)
		p, err := ParsePath(v.Path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := derivePath(CurveSecp256k1, seed, p)
		if err != nil {
			t.Fatalf("vector %d %s: %v", v.Vector, v.Path, err)
		}
		chain, key := decodeXprv(t, v.Xprv)
		if !bytes.Equal(n.chain[:], chain) || !bytes.Equal(n.key[:], key) {
			t.Errorf("vector %d %s: got key %x chain %x", v.Vector, v.Path, n.key, n.chain)
		}
		k, err := DeriveKey(CurveSecp256k1, seed, p)
		if err != nil || !bytes.Equal(k.PrivateKey(), key) {
			t.Errorf("DeriveKey vector %d %s: %v", v.Vector, v.Path, err)
		}
	}
}

func TestSLIP10Vectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/slip10-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Test, Curve, Seed, Path, ChainCode, Private, Public string
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	curves := map[string]Curve{"secp256k1": CurveSecp256k1, "nist256p1": CurveP256, "ed25519": CurveEd25519}
	for _, v := range file.Vectors {
		curve := curves[v.Curve]
		seed, _ := hex.DecodeString(v.Seed)
		p, err := ParsePath(v.Path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := derivePath(curve, seed, p)
		if err != nil {
			t.Fatalf("%s %s: %v", v.Test, v.Path, err)
		}
		if hex.EncodeToString(n.chain[:]) != v.ChainCode || hex.EncodeToString(n.key[:]) != v.Private {
			t.Errorf("%s %s: got key %x chain %x", v.Test, v.Path, n.key, n.chain)
			continue
		}
		k, err := NewKey(curve, n.key[:])
		if err != nil {
			t.Fatal(err)
		}
		pub := hex.EncodeToString(k.PublicKey())
		if curve == CurveEd25519 {
			pub = "00" + pub // SLIP-10 prints Ed25519 keys with a 0x00 prefix
		}
		if pub != v.Public {
			t.Errorf("%s %s: public %s, want %s", v.Test, v.Path, pub, v.Public)
		}
	}
}

// Ed25519 has hardened children only; a non-hardened segment is derived as hardened.
func TestEd25519HardensEverySegment(t *testing.T) {
	seed, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	a, err := DeriveKeyFromPath(CurveEd25519, seed, "m/44'/501'/0'/0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := DeriveKeyFromPath(CurveEd25519, seed, "m/44'/501'/0'/0'")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.PublicKey(), b.PublicKey()) {
		t.Fatal("m/.../0 and m/.../0' differ for Ed25519")
	}
}

func TestDeriveErrors(t *testing.T) {
	if _, err := DeriveKeyFromPath(CurveSecp256k1, make([]byte, 15), "m/0"); err != ErrInvalidSeed {
		t.Errorf("short seed: %v", err)
	}
	if _, err := DeriveKeyFromPath(CurveSecp256k1, make([]byte, 65), "m/0"); err != ErrInvalidSeed {
		t.Errorf("long seed: %v", err)
	}
	if _, err := DeriveKeyFromPath(Curve("CURVE_X"), make([]byte, 32), "m/0"); err == nil {
		t.Error("unknown curve accepted")
	}
	if _, err := DeriveKeyFromPath(CurveSecp256k1, make([]byte, 32), "m/x"); err == nil {
		t.Error("bad path accepted")
	}
}

func TestNewKey(t *testing.T) {
	secpN, _ := hex.DecodeString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
	p256N, _ := hex.DecodeString("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
	zero := make([]byte, 32)
	bad := []struct {
		curve Curve
		raw   []byte
	}{
		{CurveSecp256k1, zero}, {CurveSecp256k1, secpN}, {CurveP256, zero}, {CurveP256, p256N},
		{CurveEd25519, make([]byte, 31)}, {CurveSecp256k1, make([]byte, 33)}, {Curve("x"), secpN[:32]},
	}
	for _, b := range bad {
		if _, err := NewKey(b.curve, b.raw); err == nil {
			t.Errorf("NewKey(%s, %x) accepted", b.curve, b.raw)
		}
	}
	// Ed25519: every 32-byte seed is a key; RFC 8032 test 1.
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	k, err := NewKey(CurveEd25519, seed)
	if err != nil ||
		hex.EncodeToString(k.PublicKey()) != "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" {
		t.Fatalf("ed25519 public key %x, %v", k.PublicKey(), err)
	}
	one := make([]byte, 32)
	one[31] = 1
	k, _ = NewKey(CurveSecp256k1, one)
	if hex.EncodeToString(
		k.UncompressedPublicKey(),
	) != "0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8" {
		t.Fatalf("secp256k1 G = %x", k.UncompressedPublicKey())
	}
	k, _ = NewKey(CurveP256, one)
	if hex.EncodeToString(k.PublicKey()) != "036b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296" {
		t.Fatalf("P-256 G = %x", k.PublicKey())
	}
	k.Wipe()
	if !bytes.Equal(k.PrivateKey(), zero) {
		t.Fatal("Wipe left key bytes")
	}
}

func TestGenerateKey(t *testing.T) {
	for _, c := range []Curve{CurveSecp256k1, CurveP256, CurveEd25519} {
		a, err := GenerateKey(c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := GenerateKey(c)
		if bytes.Equal(a.PrivateKey(), b.PrivateKey()) || a.Curve() != c {
			t.Fatalf("%s: bad generated keys", c)
		}
	}
	if _, err := GenerateKey(Curve("x")); err == nil {
		t.Fatal("unknown curve accepted")
	}
}
