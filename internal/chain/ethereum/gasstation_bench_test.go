package ethereum

import (
	"math/big"
	"testing"
)

// benchBatch is a full batch: 20 ERC-20 transfers (68 bytes of calldata each).
func benchBatch() *BatchExecution {
	b := &BatchExecution{ChainID: big.NewInt(1), Nonce: big.NewInt(41), Deadline: 1 << 31}
	for i := range MaxBatchCalls {
		b.Calls = append(b.Calls, BatchCall{To: [20]byte{19: byte(i)}, Value: big.NewInt(0), Data: make([]byte, 68)})
	}
	return b
}

func BenchmarkBatchExecutionDigest20(b *testing.B) {
	batch := benchBatch()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := batch.Digest(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecuteBatchCalldata20(b *testing.B) {
	batch := benchBatch()
	sig := make([]byte, 65)
	sig[64] = 27
	b.ReportAllocs()
	for b.Loop() {
		if _, err := batch.ExecuteBatchCalldata(sig); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeEIP712Domain(b *testing.B) {
	answer := loadGasStationVectors(b).DomainAnswer.Answer
	raw := unhex(b, answer)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEIP712Domain(raw); err != nil {
			b.Fatal(err)
		}
	}
}
