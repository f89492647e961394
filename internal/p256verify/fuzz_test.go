package p256verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"math/big"
	"testing"
)

// fuzzKey derives a P-256 private key from seed: one byte b gives the edge-case scalars
// b+1 (1, 2, ...) and, for 0xff, n-1; anything longer is hashed to a scalar in [1, n-1].
func fuzzKey(t testing.TB, seed []byte) *ecdsa.PrivateKey {
	var d *big.Int
	switch {
	case len(seed) == 1 && seed[0] == 0xff:
		d = new(big.Int).Sub(n, big.NewInt(1))
	case len(seed) == 1:
		d = big.NewInt(int64(seed[0]) + 1)
	default:
		h := sha256.Sum256(seed)
		d = new(big.Int).SetBytes(h[:])
		d.Mod(d, new(big.Int).Sub(n, big.NewInt(1)))
		d.Add(d, big.NewInt(1))
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d.FillBytes(make([]byte, 32)))
	if err != nil {
		t.Fatalf("scalar %x: %v", d, err)
	}
	return k
}

// fuzzNonce is a deterministic nonce for the fuzzer's own signatures (any k in [1, n-1] makes
// a valid signature; this one is not secret and need not be).
func fuzzNonce(seed, hash []byte) *big.Int {
	h := sha256.Sum256(append(append([]byte("nonce"), seed...), hash...))
	k := new(big.Int).SetBytes(h[:])
	k.Mod(k, new(big.Int).Sub(n, big.NewInt(1)))
	return k.Add(k, big.NewInt(1))
}

// FuzzVerify checks the table verifier against crypto/ecdsa on the same key, hash and
// signature. mode picks what the signature is: 0, the fuzzer's bytes as DER; 1, a valid
// signature of hash; 2, the same with s replaced by n-s (high S); 3, the valid signature with
// r and s moved by the fuzzer's bytes (adding n, zeroing, off by small amounts), so the
// boundary checks are reached with values a forger would try.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("key"), []byte("hash"), []byte{}, byte(1), int8(0), int8(0))
	f.Add([]byte{0}, make([]byte, 32), []byte{}, byte(1), int8(0), int8(0))
	f.Add([]byte{0xff}, make([]byte, 32), []byte{}, byte(2), int8(0), int8(0))
	f.Add([]byte("key"), []byte("hash"), []byte{}, byte(3), int8(1), int8(0))
	f.Add([]byte("key"), []byte("hash"), []byte{}, byte(3), int8(0), int8(-1))
	f.Add([]byte("key"), []byte("hash"), []byte{}, byte(3), int8(100), int8(100))
	f.Add(
		[]byte("key"),
		[]byte("hash"),
		[]byte{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01},
		byte(0),
		int8(0),
		int8(0),
	)
	f.Fuzz(func(t *testing.T, seed, hash, sig []byte, mode byte, dr, ds int8) {
		if len(hash) > 80 {
			hash = hash[:80]
		}
		priv := fuzzKey(t, seed)
		tbl, err := NewTable(&priv.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		var r, s *big.Int
		switch mode % 4 {
		case 0:
			got, std := tbl.VerifyASN1(hash, sig), ecdsa.VerifyASN1(&priv.PublicKey, hash, sig)
			if got != std {
				t.Fatalf("DER %x: table %v, crypto/ecdsa %v", sig, got, std)
			}
			return
		default:
			r, s = signWith(priv, hash, fuzzNonce(seed, hash))
			if r == nil {
				return // r or s came out zero: not a signature
			}
		}
		switch mode % 4 {
		case 2:
			s = new(big.Int).Sub(n, s)
		case 3:
			r = moved(r, dr)
			s = moved(s, ds)
		}
		got, std := tbl.Verify(hash, r, s), ecdsa.Verify(&priv.PublicKey, hash, r, s)
		if got != std {
			t.Fatalf("r %x s %x: table %v, crypto/ecdsa %v", r, s, got, std)
		}
		if mode%4 != 3 && !got {
			t.Fatalf("a valid signature (mode %d) does not verify", mode%4)
		}
		if r.Sign() >= 0 && s.Sign() >= 0 {
			der := derSig(r, s)
			if got, std := tbl.VerifyASN1(hash, der), ecdsa.VerifyASN1(&priv.PublicKey, hash, der); got != std {
				t.Fatalf("DER of r %x s %x: table %v, crypto/ecdsa %v", r, s, got, std)
			}
		}
	})
}

// moved returns x changed by code: 0 leaves it; 1 zeroes it; 2 adds n; 3 replaces it by n;
// other values add code/4 (negative ones subtract).
func moved(x *big.Int, code int8) *big.Int {
	switch code {
	case 0:
		return x
	case 1:
		return big.NewInt(0)
	case 2:
		return new(big.Int).Add(x, n)
	case 3:
		return new(big.Int).Set(n)
	}
	return new(big.Int).Add(x, big.NewInt(int64(code/4)))
}

// signWith is textbook ECDSA with nonce k: r = (k·G).x mod n, s = k⁻¹(e + r·d) mod n.
func signWith(priv *ecdsa.PrivateKey, hash []byte, k *big.Int) (r, s *big.Int) {
	x, _ := elliptic.P256().ScalarBaseMult(k.FillBytes(make([]byte, 32)))
	r = new(big.Int).Mod(x, n)
	e := hashToInt(hash)
	s = new(big.Int).Mul(r, priv.D)
	s.Add(s, e)
	s.Mul(s, new(big.Int).ModInverse(k, n))
	s.Mod(s, n)
	if r.Sign() == 0 || s.Sign() == 0 {
		return nil, nil
	}
	return r, s
}

// FuzzNewTableFromBytes checks that a table is built for exactly the encodings crypto/ecdsa
// accepts as an uncompressed P-256 key, and that a table from a key verifies as the key does.
func FuzzNewTableFromBytes(f *testing.F) {
	k := fuzzKey(f, []byte("key"))
	raw, _ := k.PublicKey.Bytes()
	f.Add(raw)
	f.Add([]byte{0})
	f.Add(append([]byte{4}, make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != 4 {
			return // compressed keys are parsed by the caller (crypto/ecdsa has no parser for them)
		}
		pub, stdErr := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b)
		tbl, err := NewTableFromBytes(b)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%x: table error %v, crypto/ecdsa error %v", b, err, stdErr)
		}
		if err != nil {
			return
		}
		h := sha256.Sum256(b)
		sig := derSig(big.NewInt(1), big.NewInt(1))
		if tbl.VerifyASN1(h[:], sig) != ecdsa.VerifyASN1(pub, h[:], sig) {
			t.Fatal("table and crypto/ecdsa disagree")
		}
	})
}
