package hd

import (
	"math/big"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/latchkey/latchkey/internal/signeddigits"
)

// The nonce's point k·G is three quarters of a secp256k1 signature's CPU (docs/performance.md,
// "Issue 26, the round of 2026-11-28: the secp256k1 signature, and what bounds a signature
// now"). dcrd's ScalarBaseMultNonConst adds one precomputed point per byte of k: 32 additions.
// baseMult adds one per signed 11-bit digit of k instead, 24 additions, from a table of
// d·2^(11·i)·G for every window i and d in 1..1024 (24,576 affine points, 1.9 MiB, built once
// at the first signature in about 40 ms). Like dcrd's, it runs in time that depends on k and
// looks its table up by k's digits; the signature's inversions are blinded (sign.go).

const (
	// baseWindow is the width in bits of one signed digit of the scalar.
	baseWindow = 11
	// baseWindows is the number of the scalar's digits (signeddigits.Count).
	baseWindows = (256 + baseWindow) / baseWindow
	// basePerWindow is how many multiples each window keeps: 1..2^(baseWindow-1); negative
	// digits use the negated point.
	basePerWindow = 1 << (baseWindow - 1)
)

// affinePoint is a point with Z = 1, its coordinates normalized.
type affinePoint struct{ x, y secp256k1.FieldVal }

var (
	baseTableOnce sync.Once
	// baseTable[i*basePerWindow+d-1] is d·2^(baseWindow·i)·G.
	baseTable []affinePoint
)

// baseMult sets r to k·G.
func baseMult(k *secp256k1.ModNScalar, r *secp256k1.JacobianPoint) {
	baseTableOnce.Do(buildBaseTable)
	kb := k.Bytes()
	defer clear(kb[:])
	var digits [baseWindows]int
	signeddigits.Recode(&kb, baseWindow, digits[:])
	defer clear(digits[:])
	r.X.Zero() // the point at infinity
	r.Y.Zero()
	r.Z.Zero()
	var q secp256k1.JacobianPoint
	q.Z.SetInt(1)
	for i, d := range digits {
		switch {
		case d > 0:
			p := &baseTable[i*basePerWindow+d-1]
			q.X, q.Y = p.x, p.y
		case d < 0:
			p := &baseTable[i*basePerWindow-d-1]
			q.X = p.x
			q.Y.NegateVal(&p.y, 1).Normalize()
		default:
			continue
		}
		secp256k1.AddNonConst(r, &q, r)
	}
	q.X.Zero()
	q.Y.Zero()
}

// buildBaseTable computes every window's multiples in Jacobian coordinates and converts each
// window to affine with one inversion (Montgomery's trick). Nothing here is secret.
func buildBaseTable() {
	table := make([]affinePoint, baseWindows*basePerWindow)
	var one secp256k1.ModNScalar
	one.SetInt(1)
	var base secp256k1.JacobianPoint // 2^(baseWindow·i)·G
	secp256k1.ScalarBaseMultNonConst(&one, &base)
	jac := make([]secp256k1.JacobianPoint, basePerWindow)
	prefix := make([]secp256k1.FieldVal, basePerWindow)
	for i := range baseWindows {
		jac[0] = base
		for d := 1; d < basePerWindow; d++ {
			secp256k1.AddNonConst(&jac[d-1], &base, &jac[d])
		}
		// The next window's base is 2·(basePerWindow·base).
		secp256k1.DoubleNonConst(&jac[basePerWindow-1], &base)
		toAffine(jac, prefix, table[i*basePerWindow:(i+1)*basePerWindow])
	}
	baseTable = table
}

// toAffine converts the points jac (none at infinity) to out, inverting the product of their
// Z coordinates once; prefix is scratch space of the same length.
func toAffine(jac []secp256k1.JacobianPoint, prefix []secp256k1.FieldVal, out []affinePoint) {
	var acc secp256k1.FieldVal
	acc.SetInt(1)
	for i := range jac {
		prefix[i] = acc // Z_0·…·Z_{i-1}
		acc.Mul(&jac[i].Z).Normalize()
	}
	var buf [32]byte
	acc.PutBytes(&buf)
	inv := new(big.Int).SetBytes(buf[:])
	inv.ModInverse(inv, secp256k1P)
	inv.FillBytes(buf[:])
	acc.SetBytes(&buf) // (Z_0·…·Z_{n-1})⁻¹
	for i := len(jac) - 1; i >= 0; i-- {
		var zinv, zinv2, zinv3 secp256k1.FieldVal
		zinv.Mul2(&acc, &prefix[i]).Normalize() // Z_i⁻¹
		acc.Mul(&jac[i].Z).Normalize()          // (Z_0·…·Z_{i-1})⁻¹
		zinv2.SquareVal(&zinv)
		zinv3.Mul2(&zinv2, &zinv)
		out[i].x.Mul2(&jac[i].X, &zinv2).Normalize()
		out[i].y.Mul2(&jac[i].Y, &zinv3).Normalize()
	}
}
