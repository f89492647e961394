package ethereum

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// largeABI is an ABI of about size bytes shaped like a real contract's: functions taking an
// address, integers, a tuple (order, fee) and an array of tuples, with their outputs, each
// named apart, and the ERC-20 transfer among them.
func largeABI(size int) string {
	var b strings.Builder
	b.WriteString(`[{"type":"function","name":"transfer","stateMutability":"nonpayable",` +
		`"inputs":[{"name":"dst","type":"address"},{"name":"wad","type":"uint256"}],` +
		`"outputs":[{"name":"","type":"bool"}]}`)
	for i := 0; b.Len() < size-600; i++ {
		fmt.Fprintf(&b, `,{"type":"function","name":"fulfillOrder%d","stateMutability":"payable","inputs":[`+
			`{"name":"recipient","type":"address","internalType":"address"},`+
			`{"name":"amount","type":"uint256","internalType":"uint256"},`+
			`{"name":"order","type":"tuple","internalType":"struct Order","components":[`+
			`{"name":"offerer","type":"address"},{"name":"zone","type":"address"},{"name":"startTime","type":"uint256"}]},`+
			`{"name":"fees","type":"tuple[]","internalType":"struct Fee[]","components":[`+
			`{"name":"recipient","type":"address"},{"name":"bps","type":"uint16"}]}],`+
			`"outputs":[{"name":"fulfilled","type":"bool","internalType":"bool"}]}`, i)
	}
	b.WriteString(`]`)
	return b.String()
}

var transferCall, _ = hex.DecodeString("a9059cbb" +
	"00000000000000000000000008d2b0a37f869ff76bacb5bab3278e26ab7067b7" +
	"00000000000000000000000000000000000000000000000006f05b59d3b20000")

// BenchmarkDecodeCall decodes an ERC-20 transfer against an ABI of 400 KB, parsing the ABI for
// every call (what every signing request to the contract did) or once (ParseABI, kept by
// policies.ContractABI).
func BenchmarkDecodeCall(b *testing.B) {
	abiJSON := []byte(largeABI(400 << 10))
	b.Run("parse each call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeCall(abiJSON, transferCall); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parsed once", func(b *testing.B) {
		a, err := ParseABI(abiJSON)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.DecodeCall(transferCall); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestParsedABISize measures what a parsed ABI keeps in memory against its JSON, the figure
// behind policies.MaxCachedABIBytes.
func TestParsedABISize(t *testing.T) {
	abiJSON := []byte(largeABI(400 << 10))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, err := ParseABI(abiJSON)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("an ABI of %d bytes (%d functions) keeps %d bytes parsed", len(abiJSON), len(a.parsed.Methods), kept)
	if _, err := a.DecodeCall(transferCall); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(a)
}
