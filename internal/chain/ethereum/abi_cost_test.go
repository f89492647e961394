package ethereum

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/latchkey/latchkey/internal/costtest"
)

// The ABI cost tests (docs/limits.md §4.3) feed DecodeCall calldata whose offsets share one
// child, static arrays larger than the calldata, and interfaces shaped to make go-ethereum's ABI
// parser quadratic, at a size n and 4n.

// abiWord is one 32-byte ABI word holding v.
func abiWord(v uint64) []byte {
	w := make([]byte, 32)
	binary.BigEndian.PutUint64(w[24:], v)
	return w
}

func abiSelector(sig string) []byte { return crypto.Keccak256([]byte(sig))[:4] }

// abiOneFunction is an ABI with one function f taking one argument of type typ.
func abiOneFunction(typ string) []byte {
	return []byte(`[{"type":"function","name":"f","inputs":[{"name":"a","type":"` + typ + `"}],"outputs":[]}]`)
}

// abiSharedNested is calldata for f(uint256[]...[]) with dims levels of arrays of length l, where
// every offset of a level points at the one child array of the next: 3·l words that decode, in
// go-ethereum, to l^dims integers.
func abiSharedNested(dims, l int) []byte {
	out := abiSelector("f(uint256" + strings.Repeat("[]", dims) + ")")
	out = append(out, abiWord(32)...) // the argument's offset
	for d := 0; d < dims; d++ {
		out = append(out, abiWord(uint64(l))...)
		for i := 0; i < l; i++ {
			if d < dims-1 {
				out = append(out, abiWord(uint64(32*l))...) // the next level, just after these offsets
			} else {
				out = append(out, abiWord(uint64(i))...)
			}
		}
	}
	return out
}

// abiSharedStrings is calldata for f(string[]) with l offsets that all point at one string of s
// bytes: l·s bytes of strings from about 32·l + s bytes.
func abiSharedStrings(l, s int) []byte {
	out := abiSelector("f(string[])")
	out = append(out, abiWord(32)...)
	out = append(out, abiWord(uint64(l))...)
	for i := 0; i < l; i++ {
		out = append(out, abiWord(uint64(32*l))...)
	}
	out = append(out, abiWord(uint64(s))...)
	out = append(out, make([]byte, (s+31)/32*32)...)
	return out
}

// abiAndCalldata joins an ABI and calldata into one input, split again by abiSplitInput.
func abiAndCalldata(abiJSON, data []byte) []byte {
	return append(append(append([]byte(nil), abiJSON...), 0), data...)
}

func abiSplitInput(in []byte) (abiJSON, data []byte) {
	for i, c := range in {
		if c == 0 {
			return in[:i], in[i+1:]
		}
	}
	return in, nil
}

// abiDecodeShape is a cost shape for DecodeCall; perByte, if given, replaces costtest's default
// allocation bound.
func abiDecodeShape(name string, mk func(n int) []byte, perByte ...float64) costtest.Shape {
	s := costtest.Shape{
		Name: name,
		Make: mk,
		Run: func(in []byte) {
			abiJSON, data := abiSplitInput(in)
			_, _ = DecodeCall(abiJSON, data)
		},
	}
	if len(perByte) > 0 {
		s.PerByte = perByte[0]
	}
	return s
}

// TestDecodeCallCostIsLinear: decoding calldata costs time and memory in proportion to the
// calldata and the interface, whatever their shape.
func TestDecodeCallCostIsLinear(t *testing.T) {
	costtest.Linear(t, 2<<10,
		abiDecodeShape("offsets sharing one child, uint256[][][]", func(n int) []byte {
			return abiAndCalldata(abiOneFunction("uint256[][][]"), abiSharedNested(3, n/96))
		}),
		abiDecodeShape("offsets sharing one string, string[]", func(n int) []byte {
			return abiAndCalldata(abiOneFunction("string[]"), abiSharedStrings(n/64, n/2))
		}),
		abiDecodeShape("a static array larger than the calldata", func(n int) []byte {
			k := n / 32
			typ := fmt.Sprintf("uint256[%d][%d][%d]", k, k, k)
			return abiAndCalldata(abiOneFunction(typ), append(abiSelector("f("+typ+")"), make([]byte, 32*k)...))
		}),
		abiDecodeShape("many functions with one name", func(n int) []byte {
			entry := `{"type":"function","name":"f","inputs":[],"outputs":[]}`
			entries := strings.Repeat(entry+",", n/len(entry)) + `{"type":"function","name":"g","inputs":[]}`
			return abiAndCalldata([]byte("["+entries+"]"), abiSelector("g()"))
		}),
		abiDecodeShape("many tuple components with one name", func(n int) []byte {
			comp := `{"name":"a","type":"uint8"}`
			comps := strings.TrimSuffix(strings.Repeat(comp+",", n/len(comp)), ",")
			abiJSON := `[{"type":"function","name":"f","inputs":[{"name":"t","type":"tuple","components":[` +
				comps + `]}]}]`
			return abiAndCalldata([]byte(abiJSON), abiSelector("f()"))
		}),
		abiDecodeShape("many array dimensions", func(n int) []byte {
			return abiAndCalldata(abiOneFunction("uint256"+strings.Repeat("[]", n/2)), abiSelector("f()"))
		}),
		abiDecodeShape("deeply nested tuples", func(n int) []byte {
			open := `{"name":"a","type":"tuple","components":[`
			d := n / (len(open) + 2)
			t := strings.Repeat(open, d) + `{"name":"a","type":"uint8"}` + strings.Repeat("]}", d)
			return abiAndCalldata([]byte(`[{"type":"function","name":"f","inputs":[`+t+`]}]`), abiSelector("f()"))
		}),
		abiDecodeShape("functions with tuples nested to the limit", func(n int) []byte {
			d := MaxABITupleDepth
			t := strings.Repeat(`{"name":"a","type":"tuple","components":[`, d) + `{"name":"a","type":"uint8"}` +
				strings.Repeat("]}", d)
			var b strings.Builder
			b.WriteString(`[{"type":"function","name":"g","inputs":[]}`)
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, `,{"type":"function","name":"f%d","inputs":[%s]}`, i, t)
			}
			b.WriteString("]")
			return abiAndCalldata([]byte(b.String()), abiSelector("g()"))
		}, 128), // go-ethereum builds a type string and a Go struct type per level: ~90 bytes per byte
	)
}

// TestDecodeCallRefusesExpansion: calldata whose offsets all point at one child decodes, in
// go-ethereum, to far more values than it has words (the f(uint256[][][]): 31 KB, 1.6 s
// and +763 MB). DecodeCall refuses it, as it refuses calldata that does not decode, while the same
// values encoded without sharing still decode.
func TestDecodeCallRefusesExpansion(t *testing.T) {
	for _, c := range []struct {
		name, typ string
		data      []byte
	}{
		{"uint256[][][] sharing offsets", "uint256[][][]", abiSharedNested(3, 40)},
		{"string[] sharing one string", "string[]", abiSharedStrings(200, 4096)},
	} {
		if call, err := DecodeCall(abiOneFunction(c.typ), c.data); err == nil {
			t.Errorf("%s: %d bytes of calldata decoded to %s", c.name, len(c.data), abiDescribeArgs(call.Args))
		} else if !strings.Contains(err.Error(), "more values than") {
			t.Errorf("%s: error %q does not say what limit it met", c.name, err)
		}
	}

	// 40 x 40 x 40 integers encoded the standard way (no shared offsets): 64,000 values from
	// 2 MB of calldata decode.
	inner := make([]*big.Int, 40)
	for i := range inner {
		inner[i] = big.NewInt(int64(i))
	}
	mid := make([][]*big.Int, 40)
	for i := range mid {
		mid[i] = inner
	}
	outer := make([][][]*big.Int, 40)
	for i := range outer {
		outer[i] = mid
	}
	typ, err := abi.NewType("uint256[][][]", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := abi.Arguments{{Name: "a", Type: typ}}.Pack(outer)
	if err != nil {
		t.Fatal(err)
	}
	call, err := DecodeCall(abiOneFunction("uint256[][][]"), append(abiSelector("f(uint256[][][])"), packed...))
	if err != nil {
		t.Fatalf("standard encoding refused: %v", err)
	}
	if got := call.Args["a"].([]any)[39].([]any)[39].([]any)[39].(*big.Int); got.Int64() != 39 {
		t.Fatalf("a[39][39][39] = %v", got)
	}
}

func abiDescribeArgs(args map[string]any) string {
	var count func(v any) int
	count = func(v any) int {
		switch x := v.(type) {
		case []any:
			n := 1
			for _, e := range x {
				n += count(e)
			}
			return n
		case map[string]any:
			n := 1
			for _, e := range x {
				n += count(e)
			}
			return n
		}
		return 1
	}
	n := 0
	for _, v := range args {
		n += count(v)
	}
	return fmt.Sprintf("%d values", n)
}
