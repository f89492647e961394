package p256verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"math/big"
	"runtime"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// derSig encodes r and s as crypto/ecdsa does (minimal DER INTEGERs in a SEQUENCE).
func derSig(r, s *big.Int) []byte {
	var b cryptobyte.Builder
	b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(r)
		b.AddASN1BigInt(s)
	})
	return b.BytesOrPanic()
}

type fixture struct {
	priv *ecdsa.PrivateKey
	tbl  *Table
	hash []byte
	r, s *big.Int
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := NewTable(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("a request body"))
	r, s, err := ecdsa.Sign(rand.Reader, k, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return fixture{priv: k, tbl: tbl, hash: h[:], r: r, s: s}
}

// TestVerifyAgreesWithCryptoECDSA is a table of the cases where a shortcut goes wrong. Each
// row's expected answer is what crypto/ecdsa says, and the row also states it, so a change in
// either shows.
func TestVerifyAgreesWithCryptoECDSA(t *testing.T) {
	f := newFixture(t)
	nMinus := func(x *big.Int) *big.Int { return new(big.Int).Sub(n, x) }
	plus := func(x *big.Int, d int64) *big.Int { return new(big.Int).Add(x, big.NewInt(d)) }
	otherHash := sha256.Sum256([]byte("another body"))
	long := append(append([]byte(nil), f.hash...), 0xff, 0xee) // only the leftmost 256 bits count
	cases := []struct {
		name string
		hash []byte
		r, s *big.Int
		want bool
	}{
		{"the signature", f.hash, f.r, f.s, true},
		{"high S: n-s verifies too", f.hash, f.r, nMinus(f.s), true},
		{"another hash", otherHash[:], f.r, f.s, false},
		{"hash longer than 32 bytes is truncated", long, f.r, f.s, true},
		{"r is zero", f.hash, big.NewInt(0), f.s, false},
		{"s is zero", f.hash, f.r, big.NewInt(0), false},
		{"r is n", f.hash, new(big.Int).Set(n), f.s, false},
		{"s is n", f.hash, f.r, new(big.Int).Set(n), false},
		{"r + n", f.hash, plus(f.r, 0).Add(f.r, n), f.s, false},
		{"s + n", f.hash, f.r, plus(f.s, 0).Add(f.s, n), false},
		{"r + 1", f.hash, plus(f.r, 1), f.s, false},
		{"s + 1", f.hash, f.r, plus(f.s, 1), false},
		{"r = s = 1", f.hash, big.NewInt(1), big.NewInt(1), false},
		{"r = s = n-1", f.hash, nMinus(big.NewInt(1)), nMinus(big.NewInt(1)), false},
		{"negative r", f.hash, new(big.Int).Neg(f.r), f.s, false},
		{"negative s", f.hash, f.r, new(big.Int).Neg(f.s), false},
		{"empty hash", nil, f.r, f.s, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			std := ecdsa.Verify(&f.priv.PublicKey, c.hash, c.r, c.s)
			got := f.tbl.Verify(c.hash, c.r, c.s)
			if got != std || got != c.want {
				t.Fatalf("table %v, crypto/ecdsa %v, want %v", got, std, c.want)
			}
			if c.r.Sign() >= 0 && c.s.Sign() >= 0 {
				sig := derSig(c.r, c.s)
				if g, s := f.tbl.VerifyASN1(c.hash, sig), ecdsa.VerifyASN1(&f.priv.PublicKey, c.hash, sig); g != s {
					t.Fatalf("DER: table %v, crypto/ecdsa %v", g, s)
				}
			}
		})
	}
}

// TestVerifyDigitsAtTheEdges signs with keys and hashes chosen so that u2 = r·s⁻¹ takes the
// values whose recoding is most likely to be wrong: small, all ones, a carry out of the top
// window. It does so by choosing s = r·u2⁻¹ with a nonce k and the hash that makes the
// signature valid: e = s·k - r·d.
func TestVerifyDigitsAtTheEdges(t *testing.T) {
	f := newFixture(t)
	d := f.priv.D
	one := big.NewInt(1)
	all := new(big.Int).Sub(new(big.Int).Lsh(one, 256), one)
	u2s := []*big.Int{
		big.NewInt(1), big.NewInt(2), big.NewInt(15), big.NewInt(16), big.NewInt(17), big.NewInt(31),
		big.NewInt(33), new(big.Int).Sub(n, one), new(big.Int).Sub(n, big.NewInt(16)),
		new(big.Int).Rsh(all, 1), new(big.Int).Lsh(one, 255), new(big.Int).Mod(all, n),
		new(big.Int).Sub(new(big.Int).Lsh(one, 255), one),
	}
	for _, u2 := range u2s {
		for range 4 {
			k, err := rand.Int(rand.Reader, n)
			if err != nil || k.Sign() == 0 {
				continue
			}
			x, _ := elliptic.P256().ScalarBaseMult(k.FillBytes(make([]byte, 32)))
			r := new(big.Int).Mod(x, n)
			s := new(big.Int).Mul(r, new(big.Int).ModInverse(u2, n))
			s.Mod(s, n)
			e := new(big.Int).Mul(s, k)
			e.Sub(e, new(big.Int).Mul(r, d))
			e.Mod(e, n)
			hash := e.FillBytes(make([]byte, 32))
			std := ecdsa.Verify(&f.priv.PublicKey, hash, r, s)
			got := f.tbl.Verify(hash, r, s)
			if !std || !got {
				t.Fatalf("u2 %x: table %v, crypto/ecdsa %v, want both true", u2, got, std)
			}
			bad := new(big.Int).Add(e, one)
			if f.tbl.Verify(bad.FillBytes(make([]byte, 32)), r, s) {
				t.Fatalf("u2 %x: a wrong hash verifies", u2)
			}
		}
	}
}

// TestVerifyHashZeroAndN covers u1 = 0, where u1·G is the point at infinity: e = 0 and e = n
// (which the hash reduces to 0).
func TestVerifyHashZeroAndN(t *testing.T) {
	f := newFixture(t)
	for _, e := range []*big.Int{big.NewInt(0), new(big.Int).Set(n)} {
		hash := e.FillBytes(make([]byte, 32))
		// With e ≡ 0, s = k⁻¹·r·d; sign by hand.
		k, _ := rand.Int(rand.Reader, n)
		x, _ := elliptic.P256().ScalarBaseMult(k.FillBytes(make([]byte, 32)))
		r := new(big.Int).Mod(x, n)
		s := new(big.Int).Mul(r, f.priv.D)
		s.Mul(s, new(big.Int).ModInverse(k, n))
		s.Mod(s, n)
		std := ecdsa.Verify(&f.priv.PublicKey, hash, r, s)
		got := f.tbl.Verify(hash, r, s)
		if !std || !got {
			t.Fatalf("e = %x: table %v, crypto/ecdsa %v, want both true", e, got, std)
		}
	}
}

func TestNewTableRefuses(t *testing.T) {
	f := newFixture(t)
	raw, _ := f.priv.PublicKey.Bytes()
	offCurve := append([]byte(nil), raw...)
	offCurve[64] ^= 1
	for name, b := range map[string][]byte{
		"the point at infinity": {0},
		"a point off the curve": offCurve,
		"empty":                 nil,
		"truncated":             raw[:64],
		"x not below p":         append([]byte{4}, make([]byte, 64)...),
	} {
		if _, err := NewTableFromBytes(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewTable(&ecdsa.PublicKey{Curve: elliptic.P384()}); err == nil {
		t.Error("a P-384 key: accepted")
	}
	if tbl, err := NewTableFromBytes(elliptic.MarshalCompressed(elliptic.P256(), f.priv.X, f.priv.Y)); err != nil ||
		!tbl.Verify(f.hash, f.r, f.s) {
		t.Errorf("the compressed key: %v", err)
	}
}

// TestTableBytes: a table allocates what Bytes says (which bounds the callers' caches), give
// or take the slice header and the temporaries of one build.
func TestTableBytes(t *testing.T) {
	f := newFixture(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tbl, err := NewTable(&f.priv.PublicKey)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	got := int(after.TotalAlloc - before.TotalAlloc)
	if got < Bytes || got > Bytes+Bytes/8 {
		t.Fatalf("a table allocated %d bytes; Bytes says %d", got, Bytes)
	}
	runtime.KeepAlive(tbl)
}
