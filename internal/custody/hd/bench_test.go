package hd

import (
	"crypto/sha256"
	"testing"
)

const benchMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// BenchmarkMnemonicToSeed is the PBKDF2 cost (2048 rounds of HMAC-SHA512): once per wallet.
func BenchmarkMnemonicToSeed(b *testing.B) {
	for b.Loop() {
		if _, err := MnemonicToSeed(benchMnemonic, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeriveEthereumPath is seed -> m/44'/60'/0'/0/0: once per account.
func BenchmarkDeriveEthereumPath(b *testing.B) {
	seed, _ := MnemonicToSeed(benchMnemonic, "")
	path, _ := ParsePath("m/44'/60'/0'/0/0")
	for b.Loop() {
		k, err := DeriveKey(CurveSecp256k1, seed, path)
		if err != nil {
			b.Fatal(err)
		}
		k.Wipe()
	}
}

func BenchmarkDeriveSolanaPath(b *testing.B) {
	seed, _ := MnemonicToSeed(benchMnemonic, "")
	path, _ := ParsePath("m/44'/501'/0'/0'")
	for b.Loop() {
		if _, err := DeriveKey(CurveEd25519, seed, path); err != nil {
			b.Fatal(err)
		}
	}
}

func benchKey(b *testing.B, curve Curve, path string) *Key {
	seed, _ := MnemonicToSeed(benchMnemonic, "")
	k, err := DeriveKeyFromPath(curve, seed, path)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// The signing benchmarks start from a derived Key: no PBKDF2 and no derivation per signature.
func BenchmarkSignECDSASecp256k1(b *testing.B) {
	k := benchKey(b, CurveSecp256k1, "m/44'/60'/0'/0/0")
	d := sha256.Sum256([]byte("payload"))
	for b.Loop() {
		if _, err := k.SignECDSA(d[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignECDSAP256(b *testing.B) {
	k := benchKey(b, CurveP256, "m/0'/0")
	d := sha256.Sum256([]byte("payload"))
	for b.Loop() {
		if _, err := k.SignECDSA(d[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignEd25519(b *testing.B) {
	k := benchKey(b, CurveEd25519, "m/44'/501'/0'/0'")
	msg := make([]byte, 200)
	for b.Loop() {
		if _, err := k.SignEd25519(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignSchnorr(b *testing.B) {
	k := benchKey(b, CurveSecp256k1, "m/8797555'/0'/0'")
	d := sha256.Sum256([]byte("payload"))
	for b.Loop() {
		if _, err := k.SignSchnorr(d[:], false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignSchnorrTaproot(b *testing.B) {
	k := benchKey(b, CurveSecp256k1, "m/86'/0'/0'/0/0")
	d := sha256.Sum256([]byte("payload"))
	for b.Loop() {
		if _, err := k.SignSchnorr(d[:], true); err != nil {
			b.Fatal(err)
		}
	}
}
