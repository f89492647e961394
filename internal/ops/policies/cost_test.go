package policies_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/ops/policies"
)

// checkAllocPerByte bounds what CheckABI and CheckIDL allocate per byte of interface: the JSON is
// decoded twice for an ABI (CheckABI's own check and ethereum.CheckABILimits), each into structs
// and raw entries.
const checkAllocPerByte = 64

// repeatJSON is first, then elem(0), elem(1), ... separated by sep until n bytes, then last.
func repeatJSON(n int, first, sep string, elem func(i int) string, last string) []byte {
	var b strings.Builder
	b.WriteString(first)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(elem(i))
	}
	b.WriteString(last)
	return []byte(b.String())
}

// TestCheckInterfaceCostIsLinear: checking an uploaded interface costs time and memory in
// proportion to its size, whatever its shape (docs/limits.md §4.3).
func TestCheckInterfaceCostIsLinear(t *testing.T) {
	abiShape := func(name string, mk func(n int) []byte) costtest.Shape {
		return costtest.Shape{Name: "ABI " + name, Make: mk, Run: func(in []byte) { _ = policies.CheckABI(in) },
			PerByte: checkAllocPerByte}
	}
	idlShape := func(name string, mk func(n int) []byte) costtest.Shape {
		return costtest.Shape{Name: "IDL " + name, Make: mk, Run: func(in []byte) { _ = policies.CheckIDL(in) },
			PerByte: checkAllocPerByte}
	}
	costtest.Linear(t, 64<<10,
		abiShape("many functions", func(n int) []byte {
			return repeatJSON(n, "[", ",", func(i int) string {
				return fmt.Sprintf(`{"type":"function","name":"f%d","inputs":[{"name":"a","type":"uint256"}]}`, i)
			}, "]")
		}),
		abiShape("many functions with one name", func(n int) []byte {
			return repeatJSON(
				n,
				"[",
				",",
				func(int) string { return `{"type":"function","name":"f","inputs":[]}` },
				"]",
			)
		}),
		abiShape("many components with one name", func(n int) []byte {
			return repeatJSON(n, `[{"type":"function","name":"f","inputs":[{"name":"t","type":"tuple","components":[`,
				",", func(int) string { return `{"name":"a","type":"uint8"}` }, "]}]}]")
		}),
		abiShape("functions with components nested to the limit", func(n int) []byte {
			d := ethereum.MaxABITupleDepth
			nested := strings.Repeat(`{"name":"a","type":"tuple","components":[`, d) + `{"name":"a","type":"uint8"}` +
				strings.Repeat("]}", d)
			return repeatJSON(n, "[", ",", func(i int) string {
				return fmt.Sprintf(`{"type":"function","name":"f%d","inputs":[%s]}`, i, nested)
			}, "]")
		}),
		abiShape("components nested too deep", func(n int) []byte {
			open := `{"name":"a","type":"tuple","components":[`
			d := min(n/(len(open)+2), 5000) // encoding/json refuses 10,000 levels itself
			return []byte(`[{"type":"function","name":"f","inputs":[` + strings.Repeat(open, d) +
				`{"name":"a","type":"uint8"}` + strings.Repeat("]}", d) + `]}]`)
		}),
		abiShape("deeply nested arrays", func(n int) []byte {
			return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		}),
		abiShape("many array dimensions", func(n int) []byte {
			return []byte(`[{"type":"function","name":"f","inputs":[{"name":"a","type":"uint256` +
				strings.Repeat("[2]", n/3) + `"}]}]`)
		}),
		abiShape("long names", func(n int) []byte {
			return []byte(`[{"type":"function","name":"f` + strings.Repeat("x", n) + `","inputs":[]}]`)
		}),
		idlShape("many instructions", func(n int) []byte {
			return repeatJSON(n, `{"instructions":[`, ",", func(i int) string {
				return fmt.Sprintf(`{"name":"i%d","accounts":[],"args":[{"name":"a","type":"u64"}]}`, i)
			}, "]}")
		}),
		idlShape("deeply nested argument type", func(n int) []byte {
			d := n / 14
			return []byte(`{"instructions":[{"name":"i","args":[{"name":"a","type":` +
				strings.Repeat(`{"vec":`, d) + `"u8"` + strings.Repeat("}", d) + `}]}]}`)
		}),
	)
}

// TestCheckABILimits: ABIs that CheckABI accepted before the limits, and that made every signing
// request to their contract parse them in quadratic time or allocate without bound (go-ethereum
// renames the n-th repeat of a name after n tries, builds a string per array dimension, and
// allocates a fixed-size array whole), are refused at upload, naming the limit.
func TestCheckABILimits(t *testing.T) {
	fn := func(inputs string) string {
		return `{"type":"function","name":"f","inputs":[` + inputs + `],"outputs":[]}`
	}
	for _, c := range []struct {
		name, abi, want string
	}{
		{"2,000 functions with one name", "[" + strings.TrimSuffix(strings.Repeat(fn("")+",", 2000), ",") + "]",
			fmt.Sprintf("more than %d repeated names", ethereum.MaxABINameConflicts)},
		{"500 components with one name",
			"[" + fn(`{"name":"t","type":"tuple","components":[`+
				strings.TrimSuffix(strings.Repeat(`{"name":"a","type":"uint8"},`, 500), ",")+`]}`) + "]",
			fmt.Sprintf("more than %d repeated names", ethereum.MaxABINameConflicts)},
		{"a million fixed-size elements", "[" + fn(`{"name":"a","type":"uint256[1000][1000]"}`) + "]",
			fmt.Sprintf("more than %d values", ethereum.MaxABIStaticValues)},
		{"a fixed-size array of a trillion in a tuple",
			"[" + fn(`{"name":"t","type":"tuple","components":[{"name":"a","type":"uint8[1000000][1000000]"}]}`) + "]",
			fmt.Sprintf("more than %d values", ethereum.MaxABIStaticValues)},
		{"40 array dimensions", "[" + fn(`{"name":"a","type":"uint256`+strings.Repeat("[]", 40)+`"}`) + "]",
			fmt.Sprintf("more than the limit of %d", ethereum.MaxABIArrayDims)},
		{"5,000 entries", "[" + strings.TrimSuffix(strings.Repeat(`{"type":"error","name":"E","inputs":[]},`, 5000), ",") +
			"]", fmt.Sprintf("more than the limit of %d", ethereum.MaxABIEntries)},
	} {
		err := policies.CheckABI([]byte(c.abi))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckABI = %v, want an error saying %q", c.name, err, c.want)
		}
	}
	many := `{"instructions":[` + strings.TrimSuffix(strings.Repeat(`{"name":"i","args":[]},`, 5000), ",") + `]}`
	if err := policies.CheckIDL([]byte(many)); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("5,000 instructions: CheckIDL = %v", err)
	}
	// Real shapes stay accepted: an overload (f twice), nested tuples, a verifier's fixed arrays.
	verifier := `{"name":"a","type":"uint256[2]"},{"name":"b","type":"uint256[2][2]"},{"name":"c","type":"uint256[300]"}`
	nested := `{"name":"t","type":"tuple[]","components":[{"name":"u","type":"tuple","components":[` +
		`{"name":"x","type":"address"},{"name":"y","type":"bytes32[]"}]},{"name":"v","type":"uint8"}]}`
	ok := "[" + fn(verifier) + "," + fn(nested) + "]"
	if err := policies.CheckABI([]byte(ok)); err != nil {
		t.Errorf("a real shape refused: %v", err)
	}
}
