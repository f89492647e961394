package solana

import (
	"bytes"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

func compactU16(n int) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// refsTx is a legacy transaction whose instructions (program at index 2) each reference the
// first two accounts refs times, with data bytes of data: issue 23's item 6 is 7 × 65,535.
func refsTx(instructions, refs, data int) []byte {
	ins := compactU16(instructions)
	for i := 0; i < instructions; i++ {
		ins = append(ins, 2)
		ins = append(ins, compactU16(refs)...)
		for j := 0; j < refs; j++ {
			ins = append(ins, byte(j%2))
		}
		ins = append(ins, compactU16(data)...)
		ins = append(ins, bytes.Repeat([]byte{0xaa}, data)...)
	}
	return legacyTx(1, [3]byte{1, 0, 1}, 3, ins)
}

// lookupsTx is a v0 transaction loading n accounts through n lookup tables.
func lookupsTx(n int) []byte {
	var b []byte
	b = append(b, 1)
	b = append(b, make([]byte, 64)...)
	b = append(b, 0x80, 1, 0, 1, 2)
	b = append(b, bytes.Repeat([]byte{1}, 32)...)
	b = append(b, bytes.Repeat([]byte{2}, 32)...)
	b = append(b, bytes.Repeat([]byte{0x42}, 32)...)
	b = append(b, 1, 1)
	b = append(b, compactU16(n)...)
	for i := 0; i < n; i++ {
		b = append(b, byte(2+i%250))
	}
	b = append(b, 0)
	b = append(b, compactU16(n)...)
	for i := 0; i < n; i++ {
		b = append(b, bytes.Repeat([]byte{byte(i), byte(i >> 8), 9}, 11)[:32]...)
		b = append(b, 1, byte(i), 0)
	}
	return b
}

// TestParseAndViewCost feeds ParseTransaction and PolicyView the shapes of issue 23's item 6
// and the rest of the class: their cost must grow linearly with the transaction and stay
// within a fixed multiple of it.
func TestParseAndViewCost(t *testing.T) {
	run := func(in []byte) {
		if tx, err := ParseTransaction(in); err == nil {
			_ = tx.PolicyView()
		}
	}
	costtest.Linear(t, 2000,
		costtest.Shape{
			Name: "7 instructions × many account references", // 7 × 65,535: 1.2 s and +377 MB before
			Make: func(n int) []byte { return refsTx(7, n, 0) },
			Run:  run,
		},
		costtest.Shape{
			Name: "many instructions",
			Make: func(n int) []byte { return refsTx(n/4, 1, 1) },
			Run:  run,
		},
		costtest.Shape{
			Name: "long instruction data",
			Make: func(n int) []byte { return refsTx(1, 1, 4*n) },
			Run:  run,
		},
	)
	// Within the limits: the view's cost per byte is what a policy pays at most.
	within := []costtest.Shape{
		{
			Name: "account references within a packet",
			Make: func(n int) []byte { return refsTx(4, n, 0) },
		},
		{
			Name: "instructions within a packet",
			Make: func(n int) []byte { return refsTx(n/4, 1, 0) },
		},
		{
			Name: "lookup tables within a packet",
			Make: func(n int) []byte { return lookupsTx(n / 10) },
		},
	}
	for i := range within {
		if _, err := ParseTransaction(within[i].Make(4 * 60)); err != nil {
			t.Fatalf("%s: %v", within[i].Name, err)
		}
		within[i].Run, within[i].PerByte = run, 128
	}
	costtest.Linear(t, 60, within...)
}
