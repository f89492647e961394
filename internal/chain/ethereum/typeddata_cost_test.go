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

// typedDataFixedCost bounds what ParseTypedData allocates beside a few bytes per byte of the
// payload: encoded types (at most MaxTypedDataTypeBytes, twice as the buffer grows), a table
// of field positions per level of nested structs (MaxTypedDataDepth+1 levels of at most
// MaxTypedDataFields, 8 bytes each) and a Keccak state per level.
const typedDataFixedCost = 2*MaxTypedDataTypeBytes + (MaxTypedDataDepth+1)*MaxTypedDataFields*8 + 64<<10

// typedDataShapes are the adversarial shapes of issue 23 (items 3, 4 and 5) and the rest of
// the class, for TestTypedDataCost and TestTypedDataViewCost.
func typedDataShapes() []costtest.Shape {
	fields := func(n int, reverse bool) (types, msg string) { // S: n uint8 fields, a message S
		var tb, mb strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&tb, `,{"name":"f%d","type":"uint8"}`, i)
			j := i
			if reverse {
				j = n - 1 - i
			}
			fmt.Fprintf(&mb, `,"f%d":%d`, j, j%256)
		}
		return `"S":[` + tb.String()[1:] + `]`, `{` + mb.String()[1:] + `}`
	}
	return []costtest.Shape{
		{
			Name: "many cyclic types", // 35 KB and 140 KB: 1.7 s and quadratic before the limits
			Make: func(n int) []byte { return cyclicTypes(n, 0) },
		},
		{
			Name: "cyclic types with long names", // within MaxTypedDataTypes, over the encoded-type budget
			Make: func(n int) []byte { return cyclicTypes(MaxTypedDataTypes-2, n) },
		},
		{
			Name: "array dimensions", // "uint8[][]...[]": 3.3 s at 20 KB before, quadratic
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint8`+strings.Repeat("[]", 10*n)+`"}]`, `{"a":[]}`)
			},
		},
		{
			Name: "array dimensions of an unused type",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[],"U":[{"name":"a","type":"P`+strings.Repeat("[1]", 10*n)+`"}]`, `{}`)
			},
		},
		{
			// Item 5: 460,000 elements cost 1.5 s and +140 MB, hashed twice; then ~60 bytes a
			// byte decoded into Go values before the digest read the payload's bytes.
			Name: "long array",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint256[]"}]`,
					`{"a":[`+strings.Repeat("1,", 100*n)+`1]}`)
			},
		},
		{
			Name: "long array of small integers",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint8[]"}]`,
					`{"a":[`+strings.Repeat("1,", 100*n)+`1]}`)
			},
		},
		{
			Name: "many struct values",
			Make: func(n int) []byte {
				el := `{"x":"0x10","y":"ab","z":"0x0000000000000000000000000000000000000001"},`
				return typedPayloadOf(
					`"P":[{"name":"a","type":"S[]"}],"S":[{"name":"x","type":"int64"},`+
						`{"name":"y","type":"string"},{"name":"z","type":"address"}]`,
					`{"a":[`+strings.TrimSuffix(strings.Repeat(el, n), ",")+`]}`)
			},
		},
		{
			Name: "array of strings",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"string[]"}]`,
					`{"a":[`+strings.Repeat(`"abc",`, 30*n)+`"é"]}`)
			},
		},
		{
			Name: "array of escaped strings", // each unescaped into the one reused buffer
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"string[]"}]`,
					`{"a":[`+strings.Repeat(`"\u00e9\n",`, 20*n)+`"\ud83d\ude00"]}`)
			},
		},
		{
			Name: "long escaped strings",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"string[]"}]`,
					`{"a":["`+strings.Repeat(`\u00e9\"`, 20*n)+`","`+strings.Repeat(`\\`, 20*n)+`"]}`)
			},
		},
		{
			Name: "long malformed UTF-8 string", // each byte becomes U+FFFD, 3 bytes: the worst unescaping
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"string"}]`, `{"a":"`+strings.Repeat("\xff", 200*n)+`"}`)
			},
		},
		{
			Name: "long bytes",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"bytes"},{"name":"b","type":"bytes[]"}]`,
					`{"a":"0x`+strings.Repeat("ab", 100*n)+`","b":[`+strings.Repeat(`"0x0",`, 10*n)+`"0x"]}`)
			},
		},
		{
			Name: "objects with many fields",
			Make: func(n int) []byte {
				types, msg := fields(MaxTypedDataFields, false)
				return typedPayloadOf(`"P":[{"name":"a","type":"S[]"}],`+types,
					`{"a":[`+strings.Repeat(msg+`,`, n/10)+msg+`]}`)
			},
		},
		{
			Name: "objects with many fields in reverse order", // each field's word kept until the first comes
			Make: func(n int) []byte {
				types, msg := fields(MaxTypedDataFields, true)
				return typedPayloadOf(`"P":[{"name":"a","type":"S[]"}],`+types,
					`{"a":[`+strings.Repeat(msg+`,`, n/10)+msg+`]}`)
			},
		},
		{
			Name: "many members no type declares",
			Make: func(n int) []byte {
				var b strings.Builder
				for i := 0; i < 10*n; i++ {
					fmt.Fprintf(&b, `"m%d":[{"x":"\u0041"}],`, i)
				}
				return typedPayloadOf(`"P":[{"name":"a","type":"uint8"}]`, `{`+b.String()+`"a":1}`)
			},
		},
		{
			Name: "integers as padded strings",
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"int256[]"},{"name":"b","type":"uint8"}]`,
					`{"a":[`+strings.Repeat(`" -0x01\t",`, 10*n)+`"1"],"b":"`+strings.Repeat(" ", 100*n)+`7 "}`)
			},
		},
		{
			Name: "number exponents", // "1e9999999" made a 33-million-bit integer before the check
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint256[]"}]`,
					`{"a":[`+strings.Repeat(`1e76,1.5e3,"2.5p3",1e-999999999,`, 5*n)+`1e9999999]}`)
			},
		},
		{
			Name: "large integers",
			Make: func(n int) []byte {
				const lowest = `"-0x8000000000000000000000000000000000000000000000000000000000000000",`
				return typedPayloadOf(`"P":[{"name":"a","type":"int256[]"}]`,
					`{"a":[`+strings.Repeat(lowest, n)+strings.Repeat(`"-`+strings.Repeat("9", 76)+`",`, n)+`-1e+70]}`)
			},
		},
		{
			// A refusal at the end: the exact walk reads the payload again, indexing each struct's
			// members (its time grows with the depth of the structs, at most MaxTypedDataDepth).
			Name: "refused at the end of nested structs",
			Make: func(n int) []byte {
				inner := `{"s":{"s":{"s":{"v":[1,2,3]}}}}`
				return typedPayloadOf(`"P":[{"name":"a","type":"Q[]"}],"Q":[{"name":"s","type":"Q"},`+
					`{"name":"v","type":"uint8[3]"}]`, `{"a":[`+strings.Repeat(inner+`,`, 5*n)+`{"v":[1,2]}]}`)
			},
		},
		{
			Name: "member named twice at the end", // accepted by the fast walk but for that: read again
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"uint256[]"},{"name":"b","type":"bool"}]`,
					`{"a":[`+strings.Repeat("1,", 100*n)+`1],"b":true,"b":false}`)
			},
		},
		{
			Name: "message named many times",
			Make: func(n int) []byte {
				return []byte(`{"types":{"P":[]},"primaryType":"P","domain":{},` +
					strings.Repeat(`"message":{},`, 20*n) + `"message":{}}`)
			},
		},
		{
			Name: "deep message", // refused by MaxTypedDataJSONDepth before it is read
			Make: func(n int) []byte {
				return typedPayloadOf(`"P":[{"name":"a","type":"P[]"}]`,
					strings.Repeat(`{"a":[`, 3*n)+strings.Repeat(`]}`, 3*n))
			},
		},
		{
			Name: "many fields", // refused past MaxTypedDataFields: this measures decoding the types
			Make: func(n int) []byte {
				var types, msg strings.Builder
				for i := 0; i < 12*n; i++ {
					fmt.Fprintf(&types, `,{"name":"f%d","type":"bytes"}`, i)
					fmt.Fprintf(&msg, `,"f%d":"0x"`, i)
				}
				return typedPayloadOf(`"P":[`+types.String()[1:]+`]`, `{`+msg.String()[1:]+`}`)
			},
		},
		{
			Name: "many struct types", // refused past MaxTypedDataTypes: decoding the types again
			Make: func(n int) []byte {
				var b strings.Builder
				for i := 0; i < 12*n; i++ {
					fmt.Fprintf(&b, `"T%d":[],`, i)
				}
				return typedPayloadOf(b.String()+`"P":[]`, `{}`)
			},
		},
	}
}

// TestTypedDataCost: ParseTypedData (the digest, what every EIP-712 signing request pays)
// costs time linear in the payload and at most a few bytes of memory per byte of it, whatever
// its shape.
func TestTypedDataCost(t *testing.T) {
	shapes := typedDataShapes()
	for i := range shapes {
		shapes[i].Run = func(in []byte) { _, _ = ParseTypedData(in) }
		shapes[i].PerByte = 8
	}
	costtest.Linear(t, 300, shapes...)
}

// TestTypedDataViewCost: the policy view, built only for a policy that reads eth.eip_712,
// decodes the domain and the message into Go values: linear, at most ~100 bytes a byte. The
// shapes refused have no view: TestTypedDataCost measures them.
func TestTypedDataViewCost(t *testing.T) {
	const n = 300
	var shapes []costtest.Shape
	for _, s := range typedDataShapes() {
		if _, err := ParseTypedData(s.Make(n)); err == nil {
			s.Run = func(in []byte) { _, _, _ = HashTypedData(in) }
			s.PerByte = 128
			shapes = append(shapes, s)
		}
	}
	costtest.Linear(t, n, shapes...)
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
