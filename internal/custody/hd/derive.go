package hd

import (
	"crypto/ecdh"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// ErrInvalidSeed is returned for seeds outside BIP-32's 16 to 64 bytes.
var ErrInvalidSeed = errors.New("invalid seed: must be 16 to 64 bytes")

// node is an extended private key: key and chain code.
type node struct {
	curve Curve
	key   [32]byte
	chain [32]byte
}

func (n *node) wipe() {
	clear(n.key[:])
	clear(n.chain[:])
}

func hmacKey(curve Curve) ([]byte, error) {
	switch curve {
	case CurveSecp256k1:
		return []byte("Bitcoin seed"), nil
	case CurveP256:
		return []byte("Nist256p1 seed"), nil
	case CurveEd25519:
		return []byte("ed25519 seed"), nil
	}
	return nil, checkCurve(curve)
}

// validScalar reports whether b is in [1, n-1] for an ECDSA curve.
func validScalar(curve Curve, b *[32]byte) bool {
	switch curve {
	case CurveSecp256k1:
		var s secp256k1.ModNScalar
		ok := s.SetBytes(b) == 0 && !s.IsZero()
		s.Zero()
		return ok
	case CurveP256:
		v := new(big.Int).SetBytes(b[:])
		defer wipeInt(v)
		return v.Sign() > 0 && v.Cmp(p256Order) < 0
	}
	return true
}

// masterNode computes the SLIP-10 (BIP-32 for secp256k1) master node, retrying with S := I
// while the key is invalid.
func masterNode(curve Curve, seed []byte) (*node, error) {
	if len(seed) < 16 || len(seed) > 64 {
		return nil, ErrInvalidSeed
	}
	key, err := hmacKey(curve)
	if err != nil {
		return nil, err
	}
	var I [64]byte
	defer clear(I[:])
	hmacSHA512(&I, key, seed)
	for {
		n := &node{curve: curve}
		copy(n.key[:], I[:32])
		copy(n.chain[:], I[32:])
		if curve == CurveEd25519 || validScalar(curve, &n.key) {
			return n, nil
		}
		n.wipe()
		hmacSHA512(&I, key, I[:])
	}
}

// compressedPublic returns serP(point(k)) for the ECDSA curves.
func (n *node) compressedPublic() ([]byte, error) {
	switch n.curve {
	case CurveSecp256k1:
		var s secp256k1.ModNScalar
		s.SetBytes(&n.key)
		priv := secp256k1.NewPrivateKey(&s)
		out := priv.PubKey().SerializeCompressed()
		priv.Zero()
		s.Zero()
		return out, nil
	case CurveP256:
		priv, err := ecdh.P256().NewPrivateKey(n.key[:])
		if err != nil {
			return nil, err
		}
		return compressP256(priv.PublicKey().Bytes()), nil
	}
	return nil, fmt.Errorf("hd: no SEC1 public key for %s", n.curve)
}

// addScalars returns (a + b) mod n and whether the result is non-zero.
func addScalars(curve Curve, a, b *[32]byte) ([32]byte, bool) {
	var out [32]byte
	switch curve {
	case CurveSecp256k1:
		var x, y secp256k1.ModNScalar
		x.SetBytes(a)
		y.SetBytes(b)
		x.Add(&y)
		out = x.Bytes()
		ok := !x.IsZero()
		x.Zero()
		y.Zero()
		return out, ok
	case CurveP256:
		// math/big is not constant-time; P-256 derivation is rare (Turnkey's P-256 accounts
		// are mostly API and TVC keys) and the scalar multiplications use crypto/ecdh.
		x, y := new(big.Int).SetBytes(a[:]), new(big.Int).SetBytes(b[:])
		defer wipeInt(x)
		defer wipeInt(y)
		x.Add(x, y)
		x.Mod(x, p256Order)
		x.FillBytes(out[:])
		return out, x.Sign() != 0
	}
	return out, false
}

// child derives child i. For Ed25519 every index is hardened (see the package doc).
func (n *node) child(i uint32) (*node, error) {
	if n.curve == CurveEd25519 {
		i |= HardenedOffset
	}
	// data is 0x00 ‖ k_par (hardened) or serP(point(k_par)) (normal), then ser32(i): 37 bytes
	// on the stack, cleared on return.
	var data [37]byte
	defer clear(data[:])
	if i >= HardenedOffset {
		copy(data[1:33], n.key[:])
	} else {
		pub, err := n.compressedPublic()
		if err != nil {
			return nil, err
		}
		copy(data[:33], pub)
	}
	binary.BigEndian.PutUint32(data[33:], i)
	var I [64]byte
	defer clear(I[:])
	hmacSHA512(&I, n.chain[:], data[:])
	for {
		c := &node{curve: n.curve}
		copy(c.chain[:], I[32:])
		if n.curve == CurveEd25519 {
			copy(c.key[:], I[:32])
			return c, nil
		}
		var il [32]byte
		copy(il[:], I[:32])
		// parse256(IL) must be below n (zero is allowed) and the sum must be non-zero.
		if validScalar(n.curve, &il) || isZero(&il) {
			if k, ok := addScalars(n.curve, &il, &n.key); ok {
				c.key = k
				clear(k[:])
				clear(il[:])
				return c, nil
			}
		}
		// SLIP-10 retry: I = HMAC(c_par, 0x01 || I_R || ser32(i)).
		clear(il[:])
		data[0] = 1
		copy(data[1:33], I[32:])
		hmacSHA512(&I, n.chain[:], data[:])
		c.wipe()
	}
}

func isZero(b *[32]byte) bool {
	var acc byte
	for _, v := range b {
		acc |= v
	}
	return acc == 0
}

// derivePath walks path from the master node of seed.
func derivePath(curve Curve, seed []byte, path Path) (*node, error) {
	if len(path) > MaxPathDepth {
		return nil, pathError("path deeper than allowed")
	}
	n, err := masterNode(curve, seed)
	if err != nil {
		return nil, err
	}
	for _, i := range path {
		c, err := n.child(i)
		n.wipe()
		if err != nil {
			return nil, err
		}
		n = c
	}
	return n, nil
}

// DeriveKey derives the private key at path from a BIP-39 seed (16 to 64 bytes) on curve.
func DeriveKey(curve Curve, seed []byte, path Path) (*Key, error) {
	n, err := derivePath(curve, seed, path)
	if err != nil {
		return nil, err
	}
	defer n.wipe()
	return NewKey(curve, n.key[:])
}

// DeriveKeyFromPath is DeriveKey with a path string ("m/44'/60'/0'/0/0").
func DeriveKeyFromPath(curve Curve, seed []byte, path string) (*Key, error) {
	p, err := ParsePath(path)
	if err != nil {
		return nil, err
	}
	return DeriveKey(curve, seed, p)
}

// wipeInt zeroes the words of a big.Int holding a secret. math/big may have left copies in
// buffers it reallocated (Add, Mod) that nothing can reach any more; those are not wiped.
func wipeInt(x *big.Int) {
	w := x.Bits()
	clear(w[:cap(w)])
	x.SetInt64(0)
}
