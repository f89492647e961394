package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"math/big"
)

func ecdsaP256(uncompressed []byte) (*ecdsa.PublicKey, error) {
	return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), uncompressed)
}

func verifyRaw(k *ecdsa.PublicKey, digest, sig []byte) bool {
	return ecdsa.Verify(k, digest, new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
}
