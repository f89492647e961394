package p256verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"math/big"
	"unsafe"

	"filippo.io/nistec"
	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"

	"github.com/latchkey/latchkey/internal/signeddigits"
)

const (
	// window is the width in bits of one signed digit of u2.
	window = 5
	// windows is the number of u2's digits (signeddigits.Count).
	windows = (256 + window) / window
	// perWindow is how many multiples each window keeps: 1..2^(window-1); negative digits
	// negate them.
	perWindow = 1 << (window - 1)
)

// n is the order of the P-256 group.
var n = elliptic.P256().Params().N

// Table is a public key with its precomputed multiples. It is immutable once built and safe
// for concurrent use.
type Table struct {
	// points[i*perWindow+d-1] is d·2^(window·i)·Q.
	points []nistec.P256Point
}

// Bytes is the memory one Table holds: its points, each three 32-byte field elements, held in
// the point (nistec's assembly implementations: 96 bytes) or behind three pointers (its
// portable one: 24 bytes and three 32-byte allocations).
var Bytes = windows * perWindow * pointBytes()

func pointBytes() int {
	n := int(unsafe.Sizeof(nistec.P256Point{}))
	if n < 3*32 {
		n += 3 * 32
	}
	return n
}

// NewTable precomputes the multiples of the public key pub, which must be a P-256 key on
// the curve.
func NewTable(pub *ecdsa.PublicKey) (*Table, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return nil, errors.New("p256verify: not a P-256 public key")
	}
	raw, err := pub.Bytes()
	if err != nil {
		return nil, err
	}
	return NewTableFromBytes(raw)
}

// NewTableFromBytes is NewTable for an uncompressed or compressed SEC1 encoding of the key.
// The point at infinity is refused, as crypto/ecdsa refuses it.
func NewTableFromBytes(sec1 []byte) (*Table, error) {
	if len(sec1) == 1 {
		return nil, errors.New("p256verify: the point at infinity is not a public key")
	}
	base, err := nistec.NewP256Point().SetBytes(sec1)
	if err != nil {
		return nil, err
	}
	t := &Table{points: make([]nistec.P256Point, windows*perWindow)}
	acc := nistec.NewP256Point()
	for i := range windows {
		row := t.points[i*perWindow : (i+1)*perWindow]
		acc.Set(base)
		row[0] = *nistec.NewP256Point().Set(acc)
		for d := 1; d < perWindow; d++ {
			acc.Add(acc, base)
			row[d] = *nistec.NewP256Point().Set(acc)
		}
		// acc is perWindow·2^(window·i)·Q; twice that is the next window's base.
		base.Double(acc)
	}
	return t, nil
}

// VerifyASN1 reports whether sig, a DER ECDSA signature, is valid for hash under the Table's
// key, exactly as crypto/ecdsa.VerifyASN1 reports it.
func (t *Table) VerifyASN1(hash, sig []byte) bool {
	var rb, sb []byte
	var inner cryptobyte.String
	input := cryptobyte.String(sig)
	if !input.ReadASN1(&inner, asn1.SEQUENCE) ||
		!input.Empty() ||
		!inner.ReadASN1Integer(&rb) ||
		!inner.ReadASN1Integer(&sb) ||
		!inner.Empty() {
		return false
	}
	return t.Verify(hash, new(big.Int).SetBytes(rb), new(big.Int).SetBytes(sb))
}

// Verify reports whether (r, s) is a valid signature of hash under the Table's key, exactly as
// crypto/ecdsa.Verify reports it.
func (t *Table) Verify(hash []byte, r, s *big.Int) bool {
	if r.Sign() <= 0 || s.Sign() <= 0 || r.Cmp(n) >= 0 || s.Cmp(n) >= 0 {
		return false
	}
	e := hashToInt(hash)
	w := new(big.Int).ModInverse(s, n)
	if w == nil {
		return false // s is in [1, n-1] and n is prime: unreachable
	}
	u1 := new(big.Int).Mul(e, w)
	u1.Mod(u1, n)
	u2 := w.Mul(r, w)
	u2.Mod(u2, n)

	var u1b, u2b [32]byte
	u1.FillBytes(u1b[:])
	u2.FillBytes(u2b[:])
	p, err := nistec.NewP256Point().ScalarBaseMult(u1b[:])
	if err != nil {
		return false
	}
	p.Add(p, t.mult(&u2b))
	// BytesX refuses the point at infinity.
	x, err := p.BytesX()
	if err != nil {
		return false
	}
	v := new(big.Int).SetBytes(x)
	if v.Cmp(n) >= 0 {
		v.Sub(v, n)
	}
	return v.Cmp(r) == 0
}

// hashToInt takes the hash's leftmost 256 bits (the bit length of n) as an integer mod n, as
// FIPS 186-5 and crypto/ecdsa do.
func hashToInt(hash []byte) *big.Int {
	if len(hash) > 32 {
		hash = hash[:32]
	}
	e := new(big.Int).SetBytes(hash)
	if e.Cmp(n) >= 0 {
		e.Sub(e, n)
	}
	return e
}

// mult returns k·Q for a 32-byte big-endian scalar k, from the table: k's signed base-2^window
// digits, each in [-perWindow, perWindow], pick one precomputed point per window.
func (t *Table) mult(k *[32]byte) *nistec.P256Point {
	acc := nistec.NewP256Point() // the point at infinity
	neg := nistec.NewP256Point()
	var digits [windows]int
	signeddigits.Recode(k, window, digits[:])
	for i, d := range digits {
		switch {
		case d > 0:
			acc.Add(acc, &t.points[i*perWindow+d-1])
		case d < 0:
			neg.Negate(&t.points[i*perWindow-d-1])
			acc.Add(acc, neg)
		}
	}
	return acc
}
