package ethereum

import (
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

// typedPayloadOf wraps types (the members of "types") and a message into a payload whose
// primary type is P.
func typedPayloadOf(types, message string) []byte {
	return []byte(`{"types":{` + types + `},"primaryType":"P","domain":{"name":"x"},"message":` + message + `}`)
}

// cyclicTypes is issue 23's item 3: P has a field of each of n types, and each of them a P[],
// so that every type reaches every other and each type's encoding lists all n.
func cyclicTypes(n, nameLen int) []byte {
	pad := strings.Repeat("x", nameLen)
	var types, msg strings.Builder
	types.WriteString(`"P":[`)
	msg.WriteString(`{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			types.WriteByte(',')
			msg.WriteByte(',')
		}
		fmt.Fprintf(&types, `{"name":"f%d","type":"T%d%s"}`, i, i, pad)
		fmt.Fprintf(&msg, `"f%d":{"p":[],"x":1}`, i)
	}
	types.WriteString(`]`)
	msg.WriteString(`}`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&types, `,"T%d%s":[{"name":"p","type":"P[]"},{"name":"x","type":"uint256"}]`, i, pad)
	}
	return typedPayloadOf(types.String(), msg.String())
}

// TestTypedDataCost feeds HashTypedData (digest and policy view) the adversarial shapes of
// issue 23 (items 3, 4 and 5) and the rest of the class: its cost must grow linearly with the
// payload and stay within a fixed multiple of it.
func TestTypedDataCost(t *testing.T) {
	run := func(in []byte) { _, _, _ = HashTypedData(in) }
	costtest.Linear(t, 300,
		costtest.Shape{
			Name: "many cyclic types", // 35 KB and 140 KB: 1.7 s and quadratic before the limits
			Make: func(n int) []byte { return cyclicTypes(n, 0) },
			Run:  run,
		},
		costtest.Shape{
			Name: "cyclic types with long names", // within MaxTypedDataTypes, over the encoded-type budget
			Make: func(n int) []byte { return cyclicTypes(MaxTypedDataTypes-2, n) },
			Run:  run,
		},
		costtest.Shape{
			Name: "array dimensions", // "uint8[][]...[]": 3.3 s at 20 KB before, quadratic
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint8`+strings.Repeat("[]", 10*n)+`"}]`, `{"a":[]}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "array dimensions of an unused type",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[],"U":[{"name":"a","type":"P`+strings.Repeat("[1]", 10*n)+`"}]`, `{}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "long array", // item 5: 460,000 elements cost 1.5 s and +140 MB, hashed twice
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint8[]"}]`,
					`{"a":[`+strings.Repeat("1,", 100*n)+`1]}`)
			},
			Run:     run,
			PerByte: 128, // JSON decoding into Go values (~60 per byte of "1,") and the view (~30)
		},
		costtest.Shape{
			Name: "many struct values",
			Make: func(n int) []byte {
				el := `{"x":"0x10","y":"ab","z":"0x0000000000000000000000000000000000000001"},`
				return typedPayloadOf(
					`"P":[{"name":"a","type":"S[]"}],"S":[{"name":"x","type":"int64"},`+
						`{"name":"y","type":"string"},{"name":"z","type":"address"}]`,
					`{"a":[`+strings.TrimSuffix(strings.Repeat(el, n), ",")+`]}`)
			},
			Run:     run,
			PerByte: 96,
		},
		costtest.Shape{
			Name: "deep message", // the walk stops at MaxTypedDataDepth; JSON decoding is linear
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"P[]"}]`,
					strings.Repeat(`{"a":[`, 3*n)+strings.Repeat(`]}`, 3*n))
			},
			Run: run,
		},
		costtest.Shape{
			Name: "long escaped strings",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"string[]"}]`,
					`{"a":["`+strings.Repeat(`\u00e9\"`, 20*n)+`","`+strings.Repeat(`\\`, 20*n)+`"]}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "many fields",
			Make: func(n int) []byte {
				var types, msg strings.Builder
				for i := 0; i < 12*n; i++ { // refused past MaxTypedDataFields: this measures the decoding
					fmt.Fprintf(&types, `,{"name":"f%d","type":"bytes"}`, i)
					fmt.Fprintf(&msg, `,"f%d":"0x"`, i)
				}
				return typedPayloadOf(`"P":[`+types.String()[1:]+`]`, `{`+msg.String()[1:]+`}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "number exponents", // "1e9999999" made a 33-million-bit integer before the check
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint256[]"}]`,
					`{"a":[1e9999999,`+strings.Repeat(`1e99,`, 10*n)+`1]}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "large integers",
			Make: func(n int) []byte {
				const lowest = `"-0x8000000000000000000000000000000000000000000000000000000000000000",`
				return typedPayloadOf(`"P":[{"name":"a","type":"int256[]"}]`,
					`{"a":[`+strings.Repeat(lowest, n)+`-1e+70]}`)
			},
			Run: run,
		},
	)
}

// TestAuthorizationCost: the EIP-7702 authorization payload is three fields; what else a
// hostile one carries (deep nesting, long strings, many members) costs linearly.
func TestAuthorizationCost(t *testing.T) {
	run := func(in []byte) { _, _, _ = HashAuthorization(in) }
	const addr = `"address":"0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B"`
	costtest.Linear(t, 1000,
		costtest.Shape{
			Name: "deep nesting in chainId",
			Make: func(n int) []byte {
				nested := strings.Repeat("[", 2*n) + strings.Repeat("]", 2*n)
				return []byte(`{` + addr + `,"nonce":1,"chainId":` + nested + `}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "long strings",
			Make: func(n int) []byte {
				return []byte(`{"address":"0x` + strings.Repeat("ab", 20*n) + `","chainId":"` +
					strings.Repeat(`\u0031`, 5*n) + `","nonce":1}`)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "many members",
			Make: func(n int) []byte {
				var b strings.Builder
				for i := 0; i < 4*n; i++ {
					fmt.Fprintf(&b, `"m%d":[1],`, i)
				}
				return []byte(`{` + b.String() + addr + `,"chainId":1,"nonce":1}`)
			},
			Run: run,
		},
	)
}
