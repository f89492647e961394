package signeddigits

import (
	"crypto/sha256"
	"math/big"
	"testing"
)

// Every width either table uses and its neighbours: the digits are in range, the carry never
// leaves the last one, and they add back up to k, for the extreme scalars, every power of two
// and its predecessor, and hashes.
func TestRecodeAddsUpToTheScalar(t *testing.T) {
	var ks [][32]byte
	ks = append(ks, [32]byte{}, [32]byte{0: 0xff, 31: 0xff})
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	ks = append(ks, ones)
	for bit := range 256 {
		v := new(big.Int).Lsh(big.NewInt(1), uint(bit))
		var a, b [32]byte
		v.FillBytes(a[:])
		new(big.Int).Sub(v, big.NewInt(1)).FillBytes(b[:])
		ks = append(ks, a, b)
	}
	for i := range 500 {
		ks = append(ks, sha256.Sum256([]byte{byte(i), byte(i >> 8)}))
	}
	for w := 2; w <= 12; w++ {
		out := make([]int, Count(w))
		for _, k := range ks {
			Recode(&k, w, out)
			sum := new(big.Int)
			for i := len(out) - 1; i >= 0; i-- {
				d := out[i]
				if d > 1<<(w-1) || d <= -(1<<(w-1)) {
					t.Fatalf("w=%d k=%x: digit %d = %d out of range", w, k, i, d)
				}
				sum.Lsh(sum, uint(w)).Add(sum, big.NewInt(int64(d)))
			}
			if sum.Cmp(new(big.Int).SetBytes(k[:])) != 0 {
				t.Fatalf("w=%d k=%x: digits %v add up to %x", w, k, out, sum)
			}
		}
	}
}
