package ethereum

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The digest is computed from the payload's bytes rather than from values decoded by
// encoding/json: these tests check it against the first implementation (oldParseTypedData,
// in typeddata_oracle_test.go) payload by payload. Every payload it accepted hashes to the
// same digest with the same policy view; every payload it refused is refused with the same
// error. The only payloads refused that it accepted: a member the type declares named twice
// in one object (which value counts would depend on the reader), and integers written with an
// exponent so negative that big.ParseFloat rounded them to 0 (see intParser).

// oracleError is the oracle's error as ParseTypedData words it: encoding/json names the Go
// types, whose names the oracle's copy prefixes.
func oracleError(err error) string {
	return strings.NewReplacer("oldTypedPayload", "typedPayload", "oldTypedField", "typedField").Replace(err.Error())
}

// hugeExponent matches a refused integer whose exponent has nine digits or more.
var hugeExponent = regexp.MustCompile(`not an integer: ".*[eEpP][+-]?0*[1-9][0-9]{8,}`)

// compareWithOracle fails t when ParseTypedData and the oracle disagree on payload.
func compareWithOracle(t testing.TB, payload []byte) {
	t.Helper()
	td, err := ParseTypedData(payload)
	old, oerr := oldParseTypedData(payload)
	switch {
	case oerr != nil && err == nil:
		t.Fatalf("accepted what the oracle refused (%v):\n%s", oerr, clip(payload))
	case oerr != nil:
		if got, want := err.Error(), oracleError(oerr); got != want {
			t.Fatalf("refused with\n  %s\nthe oracle with\n  %s\npayload:\n%s", got, want, clip(payload))
		}
	case err != nil:
		if msg := err.Error(); !strings.Contains(msg, "named more than once in its object") &&
			!hugeExponent.MatchString(msg) {
			t.Fatalf("refused what the oracle accepted: %v\n%s", err, clip(payload))
		}
	default:
		if td.Digest != old.Digest {
			t.Fatalf("digest %x, the oracle's %x:\n%s", td.Digest, old.Digest, clip(payload))
		}
		if got, want := fmt.Sprint(td.View()), fmt.Sprint(old.View()); got != want {
			t.Fatalf("view\n  %s\nthe oracle's\n  %s\npayload:\n%s", got, want, clip(payload))
		}
	}
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// typedDataVectors are the payloads of the repository's EIP-712 vectors: viem's and ethers'
// (the EIP's mail, Permit2, arrays of structs...), Hyperliquid's, Seaport bulk orders.
func typedDataVectors(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range loadVectors(t).TypedData {
		out = append(out, []byte(c.ViemPayload), []byte(c.EthersPayload))
	}
	b, err := os.ReadFile("testdata/hyperliquid.json")
	if err != nil {
		t.Fatal(err)
	}
	var hyper []struct{ Payload string }
	if err := json.Unmarshal(b, &hyper); err != nil {
		t.Fatal(err)
	}
	for _, c := range hyper {
		out = append(out, []byte(c.Payload))
	}
	for _, h := range []int{0, 1, 2, 3} {
		out = append(out, seaportBulkOrder(h))
	}
	return append(out, cyclicTypes(3, 2), cyclicTypes(20, 0))
}

// TestTypedDataMatchesOracleOnVectors: the real payloads, and each with every JSON number
// and string in its message rewritten in the other shapes integers may take.
func TestTypedDataMatchesOracleOnVectors(t *testing.T) {
	for _, p := range typedDataVectors(t) {
		compareWithOracle(t, p)
		compareWithOracle(t, []byte(" \n"+string(p)+"\t "))
		// Drop EIP712Domain from types: the domain type is then derived from the domain.
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatal(err)
		}
		delete(m["types"].(map[string]any), "EIP712Domain")
		b, _ := json.Marshal(m)
		compareWithOracle(t, b)
		// Indented: blanks everywhere.
		b, _ = json.MarshalIndent(m, "", "\t ")
		compareWithOracle(t, b)
	}
}

// atomicTypes and atomicValues are crossed in TestTypedDataMatchesOracleOnValues.
var atomicTypes = []string{
	"uint8", "uint16", "uint64", "uint256", "uint", "int8", "int64", "int256", "int", "address", "bool",
	"bytes", "bytes1", "bytes4", "bytes20", "bytes32", "string", "S", "uint8[]", "uint8[2]", "int8[1][]",
	"string[]", "bytes[2]", "bool[]", "S[]", "S[1]", "address[][1]",
}

var atomicValues = []string{
	// JSON numbers
	`0`, `-0`, `1`, `-1`, `127`, `128`, `-128`, `-129`, `255`, `256`, `65535`, `1.0`, `1.5`, `-1.5`, `1e0`,
	`1e2`, `1E2`, `1e+2`, `1.5e1`, `15e-1`, `150e-2`, `1e-2`, `100e-2`, `0.0`, `0e999999999999`,
	`0e99999999999999999999`, `1e77`, `1e78`, `11e76`, `1.16e77`, `1.15e77`, `1e999999999`, `1e-999999999`,
	`1e-700000000`, `5e-646456993`, `9223372036854775807`, `9223372036854775808`, `18446744073709551615`,
	`18446744073709551616`, `-9223372036854775808`, `-9223372036854775809`,
	`115792089237316195423570985008687907853269984665640564039457584007913129639935`,
	`115792089237316195423570985008687907853269984665640564039457584007913129639936`,
	`57896044618658097711785492504343953926634992332820282019728792003956564819967`,
	`-57896044618658097711785492504343953926634992332820282019728792003956564819968`,
	`-57896044618658097711785492504343953926634992332820282019728792003956564819969`,
	`1.7356932e9`, `12345678901234567890.000`, `1` + strings.Repeat("0", 99), `1` + strings.Repeat("0", 100),
	`0.` + strings.Repeat("0", 98) + `1e99`, `1e-0`, `1e+00000000000000000000002`,
	// strings of integers
	`"0"`, `"1"`, `" 1 "`, `"\t12\n"`, `"\u00a01\u3000"`, `"\u20281"`, `"1\u0085"`, `"-1"`, `"--1"`, `"-+1"`,
	`"+1"`, `"++1"`, `"- 1"`, `"0x"`, `"0x0"`, `"0X1f"`, `"0xg"`, `"0x-1"`, `"0x+ff"`, `"-0x-1"`, `"0x--1"`,
	`"0x1_0"`, `"0xFFFFFFFFFFFFFFFF"`, `"0x10000000000000000"`, `"0x` + strings.Repeat("f", 64) + `"`,
	`"0x` + strings.Repeat("f", 65) + `"`, `"0x0` + strings.Repeat("f", 64) + `"`,
	`"-0x8000000000000000000000000000000000000000000000000000000000000000"`,
	`"-0x8000000000000000000000000000000000000000000000000000000000000001"`,
	`"0x7f"`, `"0x80"`, `"-0x80"`, `"-0x81"`, `"1e3"`, `"1.0p3"`, `"1.p3"`, `"1.5p1"`, `"1.5p-1"`, `"3.0p-1"`,
	`"1.25p2"`, `"1.0P-2"`, `"4.0p-2"`, `"1.0e3p1"`, `"1.0p"`, `"1.0p+"`, `"1.0px"`, `"1e"`, `"1e+"`, `"e5"`,
	`".5e1"`, `"5.e0"`, `"."`, `".e1"`, `"1.2.3"`, `"+1.0"`, `"-1.0"`, `"--1.0"`, `"-+1.0"`, `"+-1e1"`,
	`"1e-9223372036854775808"`, `"1e9223372036854775807"`, `"1e9223372036854775808"`, `"0e9223372036854775808"`,
	`"0.0e-9223372036854775808"`, `"1.0p-2147483000"`, `"1.0p2147483000"`, `"5e-2147483000"`,
	`"1.0p-2147483647"`, `"1.5p-2147483647"`, `"0.5p-2147483648"`, `"Inf"`, `"inf"`, `"1_000"`, `"1,000"`,
	`"١"`, `"0b1"`, `"0o7"`, `"00000000000000000000001"`, `"` + strings.Repeat("9", 80) + `"`,
	`"` + strings.Repeat("9", 81) + `"`, `"1` + strings.Repeat("0", 99) + `e-99"`,
	`"` + strings.Repeat(" ", 300) + `7` + strings.Repeat(" ", 300) + `"`, `"\u0031\u0032"`, `"\ud800"`,
	`"1\ud800"`, `"\xff"`,
	// strings
	`""`, `"a"`, `"héllo"`, `"\u00e9\"\\\/\b\f\n\r\t"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`,
	`"\ud83dx"`, `"\ud83d\u0041"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"a\xc3\"",
	`"` + strings.Repeat("é", 100) + `"`,
	// hex
	`"0x00"`, `"0x01"`, `"0x0102"`, `"0x010203"`, `"0x01020304"`, `"0X0a0B"`, `"0x1"`, `"0x123"`,
	`"0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B"`, `"0x063c0c19a282a1B52b07dD5a65b58948A07DAE32B"`,
	`"0x3c0c19a282a1B52b07dD5a65b58948A07DAE32B"`, `"0x` + strings.Repeat("ab", 32) + `"`,
	`"0x` + strings.Repeat("ab", 33) + `"`, `"0x` + strings.Repeat("a", 63) + `"`, `"\u0030x01"`,
	`"0x0\u0031"`, `"0xzz"`, `"1x01"`, `" 0x01"`, `"0x` + strings.Repeat("0", 1000) + `"`,
	// others
	`true`, `false`, `null`, `[]`, `[1]`, `[1,2]`, `[[1]]`, `[[]]`, `["0x01","0x02"]`, `[true]`, `[[1],[2]]`,
	`{}`, `{"x":1}`, `{"x":1,"x":2}`, `{"x":null}`, `{"y":1}`, `{"x":1,"y":2}`, `[{"x":1}]`,
	`[{"x":1},{"x":2}]`, `[{"x":1},{}]`, `[{},{"x":1}]`, `[{"x":1,"x":1}]`, `{"\u0078":5}`, `{"X":1}`,
	`[null]`, `[1,null]`, `["a","b"]`, `[{"x":[]}]`,
}

// TestTypedDataMatchesOracleOnValues crosses field types with values of every shape: every
// form of integer, hex and string the first implementation accepted or refused.
func TestTypedDataMatchesOracleOnValues(t *testing.T) {
	const payload = `{"types":{"T":[{"name":"a","type":"%s"},{"name":"b","type":"bool"}],` +
		`"S":[{"name":"x","type":"int8"}]},"primaryType":"T","domain":{"name":"x"},"message":%s}`
	for _, typ := range atomicTypes {
		for _, v := range atomicValues {
			for _, msg := range []string{`{"a":` + v + `,"b":true}`, `{"b":false,"a":` + v + `}`} {
				compareWithOracle(t, fmt.Appendf(nil, payload, typ, msg))
			}
		}
	}
}

// TestTypedDataMatchesOracleOnShapes: the shapes of the payload around the values (members
// missing, repeated, in any order, of the wrong type; what follows the JSON; depth).
func TestTypedDataMatchesOracleOnShapes(t *testing.T) {
	const types = `"types":{"T":[{"name":"a","type":"uint8"},{"name":"s","type":"S"},{"name":"l","type":"S[]"}],` +
		`"S":[{"name":"x","type":"string"},{"name":"y","type":"uint8[2]"}]}`
	const s = `{"x":"a","y":[1,2]}`
	messages := []string{
		`{"a":1,"s":` + s + `,"l":[]}`, `{"l":[],"s":` + s + `,"a":1}`, `{"s":` + s + `,"l":[` + s + `,` + s + `],"a":1}`,
		`{"a":1,"s":` + s + `}`, `{"s":` + s + `,"l":[]}`, `{"a":1,"a":1,"s":` + s + `,"l":[]}`,
		`{"a":1,"s":` + s + `,"l":[],"a":2}`, `{"a":1,"s":` + s + `,"l":[],"a":300}`, `{"a":300,"s":{},"l":[]}`,
		`{"a":"x","s":{},"l":5}`, `{"l":5,"s":{},"a":"x"}`, `{"a":1,"s":{"y":[1],"x":5},"l":[]}`,
		`{"a":1,"s":{"y":[1,"z"],"x":"a"},"l":[]}`, `{"a":1,"s":{"y":[1,2,3],"x":5},"l":[]}`,
		`{"a":1,"s":{"x":"a","y":[1,2],"x":"b"},"l":[]}`, `{"a":1,"s":` + s + `,"l":[` + s + `,{"x":"a"}]}`,
		`{"a":1,"s":` + s + `,"l":[{"y":[1,2],"y":[3,4],"x":"a"}]}`, `{"z":[[[{}]]],"a":1,"s":` + s + `,"l":[]}`,
		`{"a":1,"s":` + s + `,"l":[],"s":` + s + `}`, `{"a":1,"s":null,"l":[]}`, `{"a":1,"s":[],"l":{}}`,
		`{"\u0061":1,"s":` + s + `,"l":[]}`, `{"A":1,"s":` + s + `,"l":[]}`, `{"a":1,"s":` + s + `,"l":[],"":0}`,
		`{"a":1,"s":{"x":"a","y":[1,2],"x":"a"},"l":[],"a":1}`, `{"l":[{"x":"b","x":"a","y":[1,1]}],"a":1,"s":` + s + `}`,
		`{"l":[],"s":{"y":[1,2],"y":[1],"x":"q"},"a":1}`, `{"a":1,"s":{"y":[1,2],"x":"q","y":[1]},"l":[]}`,
		`{}`, `[]`, `null`, `1`, `"m"`, `true`,
	}
	domains := []string{
		`{"name":"x"}`, `{}`, `{"name":null}`, `{"name":"x","name":null}`, `{"name":null,"name":"x"}`,
		`{"chainId":1,"name":"x","version":"1","verifyingContract":"0x0000000000000000000000000000000000000001",` +
			`"salt":"0x` + strings.Repeat("00", 32) + `"}`, `{"chainId":"0x1","extra":[1,2,{}]}`,
		`{"chainId":-1}`, `{"verifyingContract":"0x01"}`, `{"name":5}`, `{"name":"x","name":"y"}`, `[]`, `"d"`, `5`, `null`,
	}
	for _, m := range messages {
		for _, d := range domains {
			for _, dt := range []string{"", `"EIP712Domain":[{"name":"name","type":"string"}],`} {
				tp := strings.Replace(types, `"types":{`, `"types":{`+dt, 1)
				compareWithOracle(t, []byte(`{`+tp+`,"primaryType":"T","domain":`+d+`,"message":`+m+`}`))
			}
		}
	}
	base := `{` + types + `,"primaryType":"T","domain":{"name":"x"},"message":{"a":1,"s":` + s + `,"l":[]}}`
	body := base[1 : len(base)-1]
	for _, p := range []string{
		base, base + ` `, base + `]`, base + `}`, base + `x`, base + ` {}`, base + `]garbage`, base + `,`, ` ` + base,
		``, ` `, `{`, `{"types"`, `[`, `[]`, `null`, `5`, `"x"`, `{}`, `{"types":{}}`, base[:len(base)-1],
		`{` + body + `,"message":{"a":2,"s":` + s + `,"l":[]}}`, // message named twice: merged
		`{` + body + `,"message":{"a":2}}`,
		`{` + body + `,"message":null}`,
		`{"message":null,` + body + `}`,
		`{"message":{"a":5},` + body + `}`,
		`{"message":{"zz":5},` + body + `}`,
		`{"message":{"a":"x"},` + body + `}`,
		`{"Message":{"a":5},` + body + `}`,
		`{"MESSAGE":[],` + body + `}`,
		`{` + body + `,"message":5}`,
		`{` + body + `,"domain":[1]}`,
		`{` + body + `,"domain":{"version":"1"}}`,
		`{` + body + `,"Domain":true,"types":5}`,
		`{"domain":"x",` + body + `,"types":5}`,
		`{"types":{"T":[{"name":5,"type":"uint8"}]},"domain":"x","primaryType":"T","message":{}}`,
		`{"types":{"T":[{"name":"a","type":"uint8"}]},"domain":{},"primaryType":7,"message":3}`,
		`{"message":3,"types":{"T":[{"name":"a","type":true}]},"domain":{},"primaryType":"T"}`,
		`{` + body + `,"types":{"U":[]}}`, `{` + body + `,"primaryType":"S"}`, `{` + body + `,"primaryType":""}`,
		`{` + body + `,"primaryType":"EIP712Domain"}`, `{` + body + `,"primaryType":"Nope"}`,
		`{` + body + `,"types":{"T":[{"name":"a","type":"T"}]}}`,
		`{"types":{"T":[{"name":"a","type":"T[]"}]},"primaryType":"T","domain":{},"message":` +
			strings.Repeat(`{"a":[`, 16) + strings.Repeat(`]}`, 16) + `}`,
		`{"types":{"T":[{"name":"a","type":"T[]"}]},"primaryType":"T","domain":{},"message":` +
			strings.Repeat(`{"a":[`, 15) + strings.Repeat(`]}`, 15) + `}`,
		`{"types":{"T":[{"name":"a","type":"uint8` + strings.Repeat("[]", 32) + `"}]},"primaryType":"T","domain":{},` +
			`"message":{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}}`,
		`{"types":{"T":[{"name":"a","type":"uint8` + strings.Repeat("[]", 32) + `"}]},"primaryType":"T","domain":{},` +
			`"message":{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}}`,
		`{"types":{"T":[{"name":"a","type":"uint8[2][3]"}]},"primaryType":"T","domain":{},` +
			`"message":{"a":[[1,2],[3,4],[5,6]]}}`,
		`{"types":{"T":[{"name":"a","type":"uint8[2][3]"}]},"primaryType":"T","domain":{},` +
			`"message":{"a":[[1,2],[3,4,5],[5,6]]}}`,
		`{"types":{"T":[{"name":"a","type":"uint8[2][3]"}]},"primaryType":"T","domain":{},` +
			`"message":{"a":[[1,2],[3,"x"],[5,6],[7,8]]}}`,
		`{"types":{"T":[{"name":"a","type":"uint8[99999999999999999999]"}]},"primaryType":"T","domain":{},` +
			`"message":{"a":[]}}`,
		string(cyclicTypes(100, 700)),
	} {
		compareWithOracle(t, []byte(p))
	}
}

// TestTypedDataMatchesOracleOnTypes: types, which is decoded only once its struct types are
// counted: around MaxTypedDataTypes, with names repeated or escaped, EIP712Domain declared or
// derived, errors in any member of the payload, the member named twice or null.
func TestTypedDataMatchesOracleOnTypes(t *testing.T) {
	names := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `,%s:[{"name":"x","type":"uint8"}]`, f(i))
		}
		return b.String()
	}
	plain := func(i int) string { return fmt.Sprintf(`"T%d"`, i) }
	var typeSets []string
	for _, n := range []int{1, 126, 127, 128, 129, 200} {
		typeSets = append(typeSets,
			`"P":[]`+names(n, plain),
			`"P":[],"EIP712Domain":[]`+names(n, plain),
			`"P":[]`+names(n, func(i int) string { return fmt.Sprintf(`"T%d"`, i%100) }),         // repeated
			`"P":[]`+names(n, func(i int) string { return fmt.Sprintf(`"T\u00%x"`, 0x30+i%10) }), // escaped
			`"P":[]`+names(n, func(i int) string { return fmt.Sprintf("\"T\xff%d\"", i%130) }),   // malformed UTF-8
			`"P":[]`+names(n, func(i int) string {
				if i == n/2 {
					return `"EIP712Domain"`
				}
				return plain(i)
			}),
		)
	}
	bad := []string{`5`, `[5]`, `[{"name":5}]`, `[{"TYPE":[]}]`, `{}`, `"x"`, `[true]`, `[null,{"type":null}]`, `null`}
	for _, b := range bad {
		typeSets = append(typeSets, `"P":[],"A":`+b+names(130, plain), `"P":[]`+names(130, plain)+`,"Z":`+b)
	}
	for _, ts := range typeSets {
		for _, rest := range []string{
			`"primaryType":"P","domain":{"name":"x"},"message":{}`,
			`"primaryType":"P","domain":{},"message":{}`,
			`"primaryType":"P","domain":5,"message":{}`,
			`"primaryType":"","domain":{},"message":{}`,
			`"primaryType":"P","domain":{}`,
		} {
			for _, p := range []string{
				`{"types":{` + ts + `},` + rest + `}`,
				`{` + rest + `,"types":{` + ts + `}}`,
				`{"types":{"Q":5},"types":null,"types":{` + ts + `},` + rest + `}`,
				`{"types":{"Q":[]},"Types":{` + ts + `},` + rest + `}`,
				`{"types":{` + ts + `},"TYPES":{"T0":[],"Q":[]},` + rest + `}`,
				`{"types":{` + ts + `},"types":null,` + rest + `}`,
				`{"types":{` + ts + `},"types":[],` + rest + `}`,
			} {
				compareWithOracle(t, []byte(p))
			}
		}
	}
}

// FuzzTypedDataIntegers: intParser reads integers as the first implementation did (through
// big.Int.SetString and big.ParseFloat), from strings and JSON numbers alike.
func FuzzTypedDataIntegers(f *testing.F) {
	for _, v := range atomicValues {
		f.Add(strings.Trim(v, `"`))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []any{s, json.Number(s)} {
			want := new(big.Int)
			werr := oldParseIntegerInto(want, v)
			got, err := parseInteger(v)
			switch {
			case werr != nil && err != nil:
				if err.Error() != werr.Error() {
					t.Fatalf("%#v: refused with %q, the oracle with %q", v, err, werr)
				}
			case werr != nil:
				t.Fatalf("%#v: read %v, the oracle refused it: %v", v, got, werr)
			case err != nil:
				if !hugeExponent.MatchString(err.Error()) {
					t.Fatalf("%#v: refused (%v), the oracle read %v", v, err, want)
				}
			case got.Cmp(want) != 0:
				t.Fatalf("%#v: read %v, the oracle %v", v, got, want)
			}
		}
	})
}
