package p256verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"testing"
	"time"
)

func benchKey(b *testing.B) (*ecdsa.PublicKey, []byte, []byte) {
	b.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.Sum256([]byte(`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2"}`))
	sig, err := ecdsa.SignASN1(rand.Reader, k, h[:])
	if err != nil {
		b.Fatal(err)
	}
	return &k.PublicKey, h[:], sig
}

// BenchmarkVerify compares one verification by crypto/ecdsa with one by a Table built beforehand.
func BenchmarkVerify(b *testing.B) {
	pub, h, sig := benchKey(b)
	b.Run("stdlib", func(b *testing.B) {
		b.ReportAllocs()
		start := processCPU()
		for b.Loop() {
			if !ecdsa.VerifyASN1(pub, h, sig) {
				b.Fatal("does not verify")
			}
		}
		reportCPU(b, start)
	})
	b.Run("table", func(b *testing.B) {
		t, err := NewTable(pub)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := processCPU()
		for b.Loop() {
			if !t.VerifyASN1(h, sig) {
				b.Fatal("does not verify")
			}
		}
		reportCPU(b, start)
	})
}

// BenchmarkNewTable is the cost of building one Table.
func BenchmarkNewTable(b *testing.B) {
	pub, _, _ := benchKey(b)
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if _, err := NewTable(pub); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// reportCPU adds the process's CPU time per operation since start, the figure to read on a
// busy machine.
func reportCPU(b *testing.B, start time.Duration) {
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
