package hd

import (
	"crypto/sha256"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// BenchmarkBaseMult compares the nonce's point k·G with the signed 11-bit table against dcrd's
// byte table, and times building the table.
func BenchmarkBaseMult(b *testing.B) {
	var k secp256k1.ModNScalar
	h := sha256.Sum256([]byte("nonce"))
	k.SetBytes(&h)
	var r secp256k1.JacobianPoint
	b.Run("dcrd", func(b *testing.B) {
		for b.Loop() {
			secp256k1.ScalarBaseMultNonConst(&k, &r)
		}
	})
	b.Run("table", func(b *testing.B) {
		baseMult(&k, &r)
		for b.Loop() {
			baseMult(&k, &r)
		}
	})
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			buildBaseTable()
		}
	})
}
