package ethereum

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// seaportBulkOrder is a Seaport 1.6 bulk listing of height h (2^h orders in a tree of h
// fixed-size array dimensions), as seaport-js signs it: the deepest real typed data.
func seaportBulkOrder(h int) []byte {
	order := `{"offerer":"0x1e0049783f008a0085193e00003d00cd54003c71","zone":"0x0000000000000000000000000000000000000000",` +
		`"offer":[{"itemType":2,"token":"0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d","identifierOrCriteria":"1234",` +
		`"startAmount":"1","endAmount":"1"}],"consideration":[{"itemType":0,` +
		`"token":"0x0000000000000000000000000000000000000000","identifierOrCriteria":"0",` +
		`"startAmount":"975000000000000000","endAmount":"975000000000000000",` +
		`"recipient":"0x1e0049783f008a0085193e00003d00cd54003c71"}],"orderType":0,"startTime":"1700000000",` +
		`"endTime":"1800000000","zoneHash":"0x0000000000000000000000000000000000000000000000000000000000000000",` +
		`"salt":"0x360c6ebe","conduitKey":"0x0000007b02230091a7ed01230072f7006a004d60a8d4e71d599b8104250f0000",` +
		`"counter":"0"}`
	tree := order
	for i := 0; i < h; i++ {
		tree = "[" + tree + "," + tree + "]"
	}
	return []byte(`{"types":{"EIP712Domain":[{"name":"name","type":"string"},{"name":"version","type":"string"},` +
		`{"name":"chainId","type":"uint256"},{"name":"verifyingContract","type":"address"}],` +
		`"BulkOrder":[{"name":"tree","type":"OrderComponents` + strings.Repeat("[2]", h) + `"}],` +
		`"OrderComponents":[{"name":"offerer","type":"address"},{"name":"zone","type":"address"},` +
		`{"name":"offer","type":"OfferItem[]"},{"name":"consideration","type":"ConsiderationItem[]"},` +
		`{"name":"orderType","type":"uint8"},{"name":"startTime","type":"uint256"},{"name":"endTime","type":"uint256"},` +
		`{"name":"zoneHash","type":"bytes32"},{"name":"salt","type":"uint256"},{"name":"conduitKey","type":"bytes32"},` +
		`{"name":"counter","type":"uint256"}],` +
		`"OfferItem":[{"name":"itemType","type":"uint8"},{"name":"token","type":"address"},` +
		`{"name":"identifierOrCriteria","type":"uint256"},{"name":"startAmount","type":"uint256"},` +
		`{"name":"endAmount","type":"uint256"}],` +
		`"ConsiderationItem":[{"name":"itemType","type":"uint8"},{"name":"token","type":"address"},` +
		`{"name":"identifierOrCriteria","type":"uint256"},{"name":"startAmount","type":"uint256"},` +
		`{"name":"endAmount","type":"uint256"},{"name":"recipient","type":"address"}]},` +
		`"primaryType":"BulkOrder","domain":{"name":"Seaport","version":"1.6","chainId":1,` +
		`"verifyingContract":"0x0000000000000068F116a894984e2DB1123eB395"},"message":{"tree":` + tree + `}}`)
}

// gethDigest is go-ethereum's own EIP-712 digest of a payload (signer/core/apitypes), an
// independent implementation to compare with.
func gethDigest(t *testing.T, payload []byte) string {
	t.Helper()
	var td apitypes.TypedData
	if err := json.Unmarshal(payload, &td); err != nil {
		t.Fatal(err)
	}
	d, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(d)
}

// TestTypedDataRealShapesWithinLimits: the deepest real payloads hash as go-ethereum hashes
// them: Seaport bulk orders up to a height whose tree still fits a request body.
func TestTypedDataRealShapesWithinLimits(t *testing.T) {
	for _, h := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("seaport bulk order height %d", h), func(t *testing.T) {
			p := seaportBulkOrder(h)
			td, err := ParseTypedData(p)
			if err != nil {
				t.Fatalf("%d bytes: %v", len(p), err)
			}
			if got, want := hex.EncodeToString(td.Digest[:]), gethDigest(t, p); got != want {
				t.Fatalf("digest %s, go-ethereum %s", got, want)
			}
			if td.View()["primary_type"] != "BulkOrder" {
				t.Fatalf("view %v", td.View())
			}
		})
	}
	// Integers at the edges of their types, in every accepted shape.
	p := typedPayloadOf(`"P":[{"name":"a","type":"int8"},{"name":"b","type":"int256"},{"name":"c","type":"uint256"},`+
		`{"name":"d","type":"int64[]"}]`,
		`{"a":-128,"b":"-0x8000000000000000000000000000000000000000000000000000000000000000",`+
			`"c":"115792089237316195423570985008687907853269984665640564039457584007913129639935",`+
			`"d":[-9223372036854775808,"9223372036854775807","-0x1","0x7fffffffffffffff",0]}`)
	td, err := ParseTypedData(p)
	if err != nil {
		t.Fatal(err)
	}
	gp := strings.NewReplacer(`"a":-128`, `"a":"-128"`, `[-9223372036854775808,`, `["-9223372036854775808",`,
		`,0]`, `,"0"]`, `"-0x1"`, `"-1"`,
		`"-0x8000000000000000000000000000000000000000000000000000000000000000"`,
		`"-57896044618658097711785492504343953926634992332820282019728792003956564819968"`,
		`{"types":{`, `{"types":{"EIP712Domain":[{"name":"name","type":"string"}],`).Replace(string(p))
	if got, want := hex.EncodeToString(td.Digest[:]), gethDigest(t, []byte(gp)); got != want {
		t.Fatalf("integer edges: digest %s, go-ethereum %s", got, want)
	}
}

// TestTypedDataLimits: each limit is refused with a message that names it, and a payload
// just within it is accepted.
func TestTypedDataLimits(t *testing.T) {
	structs := func(n int) string {
		var b strings.Builder
		b.WriteString(`"P":[]`)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,"T%d":[]`, i)
		}
		return b.String()
	}
	fields := func(n int) (types, msg string) {
		var tb, mb strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&tb, `,{"name":"f%d","type":"bool"}`, i)
			fmt.Fprintf(&mb, `,"f%d":true`, i)
		}
		return `"P":[` + tb.String()[1:] + `]`, `{` + mb.String()[1:] + `}`
	}
	nested := func(levels int) (types, msg string) {
		msg = strings.Repeat(`{"a":[`, levels) + `{"a":[]}` + strings.Repeat(`]}`, levels)
		return `"P":[{"name":"a","type":"P[]"}]`, msg
	}
	okFields, okMsg := fields(MaxTypedDataFields)
	badFields, badMsg := fields(MaxTypedDataFields + 1)
	okNest, okNestMsg := nested(MaxTypedDataDepth/2 - 1)
	badNest, badNestMsg := nested(MaxTypedDataDepth / 2)
	tests := []struct {
		name    string
		payload []byte
		want    string // "" when accepted
	}{
		{"types at the limit", typedPayloadOf(structs(MaxTypedDataTypes-1), `{}`), ""},
		{"too many types", typedPayloadOf(structs(MaxTypedDataTypes), `{}`), "more than the 128 allowed"},
		{"fields at the limit", typedPayloadOf(okFields, okMsg), ""},
		{"too many fields", typedPayloadOf(badFields, badMsg), "more than the 256 allowed"},
		{"dimensions at the limit", typedPayloadOf(
			`"P":[{"name":"a","type":"bool`+strings.Repeat("[]", MaxTypedDataArrayDims)+`"}]`, `{"a":[]}`), ""},
		{"too many dimensions", typedPayloadOf(
			`"P":[{"name":"a","type":"bool`+strings.Repeat("[]", MaxTypedDataArrayDims+1)+`"}]`, `{"a":[]}`),
			"more than 32 array dimensions"},
		{"nesting at the limit", typedPayloadOf(okNest, okNestMsg), ""},
		{"nesting too deep", typedPayloadOf(badNest, badNestMsg), "nested deeper than 32 levels"},
		{"JSON too deep", typedPayloadOf(`"P":[]`, `{"x":`+strings.Repeat("[", 60)+strings.Repeat("]", 60)+`}`),
			"JSON nests deeper than 48 levels"},
		{"encoded types over the budget", cyclicTypes(100, 700), "exceed 65536 bytes"},
	}
	// A refusal names what it refuses without echoing a long name back whole.
	long := strings.Repeat("x", 10_000)
	_, err := ParseTypedData(typedPayloadOf(`"P":[{"name":"`+long+`","type":"`+long+`"}]`, `{}`))
	if err == nil || len(err.Error()) > 300 {
		t.Errorf("a 10,000-byte unknown type: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTypedData(tc.payload)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalidTypedData) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
