package hd

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSignECDSASecp256k1(t *testing.T) {
	// RFC 6979 deterministic nonce: private key 1 over SHA-256("Satoshi Nakamoto"), a vector
	// published with several RFC 6979 secp256k1 implementations (e.g. python-ecdsa, trezor-crypto).
	one := make([]byte, 32)
	one[31] = 1
	k, _ := NewKey(CurveSecp256k1, one)
	digest := sha256.Sum256([]byte("Satoshi Nakamoto"))
	sig, err := k.SignECDSA(digest[:])
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(sig.R[:]) != "934b1ea10a4b3c1757e2b0c017d0b6143ce3c9a7e6a4a49860d7a6ab210ee3d8" ||
		hex.EncodeToString(sig.S[:]) != "2442ce9d2b916064108014783e923ec36b49743e2ffa1c4496f01a512aafd9e5" {
		t.Fatalf("r=%x s=%x", sig.R, sig.S)
	}
	for i := 0; i < 32; i++ {
		d := sha256.Sum256([]byte{byte(i)})
		key, _ := DeriveKeyFromPath(CurveSecp256k1, d[:], "m/44'/60'/0'/0/0")
		sig, err := key.SignECDSA(d[:])
		if err != nil {
			t.Fatal(err)
		}
		if sig.V > 1 || sig.S[0] >= 0x80 {
			t.Fatalf("v=%d s=%x: want v in {0,1} and low S", sig.V, sig.S)
		}
		compact := append([]byte{27 + 4 + sig.V}, append(sig.R[:], sig.S[:]...)...)
		pub, _, err := secpecdsa.RecoverCompact(compact, d[:])
		if err != nil || !bytes.Equal(pub.SerializeCompressed(), key.PublicKey()) {
			t.Fatalf("recovery with v=%d failed: %v", sig.V, err)
		}
	}
}

// SignECDSA computes secp256k1 signatures itself (to leave no copy of the key behind); they must
// be the dcrd library's SignCompact signatures, byte for byte.
func TestSignECDSASecp256k1MatchesDcrd(t *testing.T) {
	for i := 0; i < 200; i++ {
		seed := sha256.Sum256([]byte{byte(i), byte(i >> 8), 'k'})
		d := sha256.Sum256([]byte{byte(i), 'd'})
		key, err := NewKey(CurveSecp256k1, seed[:])
		if err != nil {
			continue // not in [1, n-1]: astronomically rare
		}
		sig, err := key.SignECDSA(d[:])
		if err != nil {
			t.Fatal(err)
		}
		want := secpecdsa.SignCompact(secp256k1.PrivKeyFromBytes(seed[:]), d[:], true)
		if got := append([]byte{27 + 4 + sig.V}, append(sig.R[:], sig.S[:]...)...); !bytes.Equal(got, want) {
			t.Fatalf("key %x digest %x: got %x, dcrd signs %x", seed, d, got, want)
		}
	}
}

// affineX and inverseBlinded invert blinded values with math/big instead of dcrd's own
// inversions: the answers must be dcrd's on every input, the small and large scalars included
// (the point's Z is then far from 1), and whatever the blinding factor drawn.
func TestBlindedInversionsMatchDcrd(t *testing.T) {
	var n secp256k1.ModNScalar
	n.SetInt(1)
	n.Negate() // n-1
	edges := []secp256k1.ModNScalar{n}
	for _, v := range []uint32{1, 2, 3, 7, 0xffffffff} {
		var k secp256k1.ModNScalar
		k.SetInt(v)
		edges = append(edges, k)
	}
	for i := range 2000 {
		var k secp256k1.ModNScalar
		if i < len(edges) {
			k = edges[i]
		} else {
			h := sha256.Sum256([]byte{byte(i), byte(i >> 8), 'n'})
			k.SetBytes(&h)
		}
		var R secp256k1.JacobianPoint
		secp256k1.ScalarBaseMultNonConst(&k, &R)
		var x [32]byte
		odd := affineX(&R, &x)
		want := R
		want.ToAffine()
		if got := want.X.Bytes(); x != *got || odd != byte(want.Y.IsOddBit()) {
			t.Fatalf("k=%v: affineX = %x, odd %d; ToAffine %x, odd %d", k, x, odd, *got, want.Y.IsOddBit())
		}
		var inv secp256k1.ModNScalar
		inverseBlinded(&inv, &k)
		if !inv.Equals(new(secp256k1.ModNScalar).InverseValNonConst(&k)) {
			t.Fatalf("k=%v: inverseBlinded = %v", k, inv)
		}
	}
}

// baseMult is dcrd's ScalarBaseMultNonConst with a table of its own: the same point for every
// scalar, the ones whose signed digits carry (all bits set, every window at its largest digit),
// the window boundaries and the extremes included.
func TestBaseMultMatchesDcrd(t *testing.T) {
	var scalars []secp256k1.ModNScalar
	add := func(b []byte) {
		var k secp256k1.ModNScalar
		k.SetByteSlice(b)
		scalars = append(scalars, k)
	}
	var nMinus1 secp256k1.ModNScalar
	nMinus1.SetInt(1)
	nMinus1.Negate()
	scalars = append(scalars, nMinus1)
	for bit := 0; bit < 256; bit++ { // 2^bit and 2^bit - 1: every window's edges
		v := new(big.Int).Lsh(big.NewInt(1), uint(bit))
		add(v.Bytes())
		add(new(big.Int).Sub(v, big.NewInt(1)).Bytes())
	}
	for _, d := range []int64{1, basePerWindow - 1, basePerWindow, basePerWindow + 1, 1<<baseWindow - 1} {
		v := new(big.Int) // d in every window
		for i := range baseWindows - 1 {
			v.Or(v, new(big.Int).Lsh(big.NewInt(d), uint(i*baseWindow)))
		}
		add(v.Bytes()[max(0, len(v.Bytes())-32):])
	}
	add(bytes.Repeat([]byte{0xff}, 32))
	for i := range 3000 {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8), 'b'})
		add(h[:])
	}
	for _, k := range scalars {
		if k.IsZero() {
			continue
		}
		var got, want secp256k1.JacobianPoint
		baseMult(&k, &got)
		secp256k1.ScalarBaseMultNonConst(&k, &want)
		got.ToAffine()
		want.ToAffine()
		if !got.X.Equals(&want.X) || !got.Y.Equals(&want.Y) {
			t.Fatalf("k=%v: baseMult = (%v, %v), dcrd (%v, %v)", k, got.X, got.Y, want.X, want.Y)
		}
	}
}

func TestSignECDSAP256(t *testing.T) {
	// RFC 6979 A.2.5, P-256 with SHA-256, message "sample".
	k, err := NewKey(CurveP256, mustHex(t, "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"))
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("sample"))
	sig, err := k.SignECDSA(digest[:])
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(sig.R[:]) != "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716" {
		t.Fatalf("r = %x", sig.R)
	}
	// The RFC's s is f7cb…cda8, above n/2; Latchkey returns the low-S twin n - s.
	rfcS, _ := new(big.Int).SetString("f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8", 16)
	wantS := new(big.Int).Sub(p256Order, rfcS)
	if new(big.Int).SetBytes(sig.S[:]).Cmp(wantS) != 0 {
		t.Fatalf("s = %x, want %x", sig.S, wantS)
	}
	for i := 0; i < 32; i++ {
		d := sha256.Sum256([]byte{byte(i)})
		key, _ := DeriveKeyFromPath(CurveP256, d[:], "m/0'/1")
		sig, err := key.SignECDSA(d[:])
		if err != nil {
			t.Fatal(err)
		}
		s := new(big.Int).SetBytes(sig.S[:])
		if s.Cmp(new(big.Int).Rsh(p256Order, 1)) > 0 || sig.V > 1 {
			t.Fatalf("high S or bad v")
		}
		pub, _ := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), key.UncompressedPublicKey())
		if !ecdsa.Verify(pub, d[:], new(big.Int).SetBytes(sig.R[:]), s) {
			t.Fatal("P-256 signature does not verify")
		}
		x, y := recoverP256(sig.R[:], s, d[:], sig.V)
		if x == nil || x.Cmp(pub.X) != 0 || y.Cmp(pub.Y) != 0 {
			t.Fatal("recovery id does not recover the key")
		}
		again, _ := key.SignECDSA(d[:])
		if again != sig {
			t.Fatal("P-256 signing is not deterministic")
		}
	}
}

func TestSignEd25519(t *testing.T) {
	// RFC 8032 section 7.1, TEST 1 and TEST 2.
	for _, v := range []struct{ seed, msg, sig string }{
		{"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
	} {
		k, _ := NewKey(CurveEd25519, mustHex(t, v.seed))
		sig, err := k.SignEd25519(mustHex(t, v.msg))
		if err != nil || hex.EncodeToString(sig) != v.sig {
			t.Fatalf("sig = %x, %v", sig, err)
		}
		if !ed25519.Verify(k.PublicKey(), mustHex(t, v.msg), sig) {
			t.Fatal("does not verify")
		}
	}
}

// Ed25519 is computed here (to leave no copy of the key behind); keys and signatures must be
// crypto/ed25519's, byte for byte, for messages shorter and longer than a SHA-512 block.
func TestSignEd25519MatchesStdlib(t *testing.T) {
	for i := 0; i < 200; i++ {
		seed := sha256.Sum256([]byte{byte(i), 'e'})
		msg := bytes.Repeat([]byte{byte(i)}, i*3)
		k, err := NewKey(CurveEd25519, seed[:])
		if err != nil {
			t.Fatal(err)
		}
		want := ed25519.NewKeyFromSeed(seed[:])
		if !bytes.Equal(k.PublicKey(), want[32:]) {
			t.Fatalf("seed %x: public key %x, crypto/ed25519 has %x", seed, k.PublicKey(), want[32:])
		}
		sig, err := k.SignEd25519(msg)
		if err != nil || !bytes.Equal(sig, ed25519.Sign(want, msg)) {
			t.Fatalf("seed %x, %d-byte message: %x, %v", seed, len(msg), sig, err)
		}
	}
}

func TestBIP340Vectors(t *testing.T) {
	f, err := os.Open("testdata/bip340-test-vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	signed, verified := 0, 0
	for _, r := range rows[1:] {
		idx, secret, pubHex, aux, msg, sigHex, result := r[0], r[1], r[2], r[3], r[4], r[5], r[6] == "TRUE"
		m := mustHex(t, msg)
		if len(m) != 32 {
			continue // vectors 15-18 sign messages of other lengths; Latchkey signs 32-byte digests only
		}
		if secret != "" {
			k, err := NewKey(CurveSecp256k1, mustHex(t, secret))
			if err != nil {
				t.Fatal(err)
			}
			var a [32]byte
			copy(a[:], mustHex(t, aux))
			sig, err := k.signSchnorr(m, false, a)
			if err != nil || !strings.EqualFold(hex.EncodeToString(sig), sigHex) {
				t.Errorf("vector %s: sig %x, %v", idx, sig, err)
			}
			if !strings.EqualFold(hex.EncodeToString(k.PublicKey()[1:]), pubHex) {
				t.Errorf("vector %s: x-only key %x", idx, k.PublicKey()[1:])
			}
			signed++
		}
		ok := false
		if pub, err := schnorr.ParsePubKey(mustHex(t, pubHex)); err == nil {
			if s, err := schnorr.ParseSignature(mustHex(t, sigHex)); err == nil {
				ok = s.Verify(m, pub)
			}
		}
		if ok != result {
			t.Errorf("vector %s: verify = %v, want %v", idx, ok, result)
		}
		verified++
	}
	if signed != 4 || verified != 15 {
		t.Fatalf("signed %d, verified %d vectors", signed, verified)
	}
}

// BIP-86's first vector: the tweaked signature verifies under the published output key.
func TestSignSchnorrTaprootBIP86(t *testing.T) {
	seed, err := MnemonicToSeed(
		"abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
		"",
	)
	if err != nil {
		t.Fatal(err)
	}
	k, err := DeriveKeyFromPath(CurveSecp256k1, seed, "m/86'/0'/0'/0/0")
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(k.PublicKey()[1:]) != "cc8a4bc64d897bddc5fbc2f670f7a8ba0b386779106cf1223c6fc5d7cd6fc115" {
		t.Fatalf("internal key %x", k.PublicKey()[1:])
	}
	outputKey, _ := schnorr.ParsePubKey(mustHex(t, "a60869f0dbcf1dc659c9cecbaf8050135ea9e8cdc487053f1dc6880949dc684c"))
	internalKey, _ := schnorr.ParsePubKey(k.PublicKey()[1:])
	digest := sha256.Sum256([]byte("sighash"))
	for _, tweak := range []bool{true, false} {
		raw, err := k.SignSchnorr(digest[:], tweak)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := schnorr.ParseSignature(raw)
		if got := sig.Verify(digest[:], outputKey); got != tweak {
			t.Errorf("tweak=%v: verifies under output key = %v", tweak, got)
		}
		if got := sig.Verify(digest[:], internalKey); got == tweak {
			t.Errorf("tweak=%v: verifies under internal key = %v", tweak, got)
		}
	}
}

func TestSignWrongCurve(t *testing.T) {
	ed, _ := GenerateKey(CurveEd25519)
	p, _ := GenerateKey(CurveP256)
	s, _ := GenerateKey(CurveSecp256k1)
	d := make([]byte, 32)
	if _, err := ed.SignECDSA(d); !errors.Is(err, ErrWrongCurve) {
		t.Error("ECDSA with Ed25519 key")
	}
	if _, err := p.SignSchnorr(d, false); !errors.Is(err, ErrWrongCurve) {
		t.Error("Schnorr with P-256 key")
	}
	if _, err := s.SignEd25519(d); !errors.Is(err, ErrWrongCurve) {
		t.Error("Ed25519 with secp256k1 key")
	}
	if _, err := s.SignECDSA(d[:31]); err == nil {
		t.Error("31-byte digest accepted")
	}
	if _, err := s.SignSchnorr(make([]byte, 33), true); err == nil {
		t.Error("33-byte digest accepted")
	}
}
