package address

import (
	"crypto/sha256"
	"errors"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// taprootOutputKey returns the x-only BIP-86 output key Q = P + hash_TapTweak(x(P))·G, where P
// is the even-y lift of the internal key (BIP-341 with no script tree).
func taprootOutputKey(compressed []byte) ([]byte, error) {
	even := append([]byte{0x02}, compressed[1:33]...)
	p, err := secp256k1.ParsePubKey(even)
	if err != nil {
		return nil, ErrInvalidPublicKey
	}
	tag := sha256.Sum256([]byte("TapTweak"))
	h := sha256.New()
	h.Write(tag[:])
	h.Write(tag[:])
	h.Write(compressed[1:33])
	var t [32]byte
	h.Sum(t[:0])
	var ts secp256k1.ModNScalar
	if ts.SetBytes(&t) != 0 {
		return nil, errors.New("taproot tweak out of range")
	}
	var pj, tg, q secp256k1.JacobianPoint
	p.AsJacobian(&pj)
	secp256k1.ScalarBaseMultNonConst(&ts, &tg)
	secp256k1.AddNonConst(&pj, &tg, &q)
	if (q.X.IsZero() && q.Y.IsZero()) || q.Z.IsZero() {
		return nil, errors.New("taproot output key is the point at infinity")
	}
	q.ToAffine()
	x := q.X.Bytes()
	return x[:], nil
}
