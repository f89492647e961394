package wallets

import (
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

// TestSignTypedDataCost is issue 23's item 5: a sign_raw_payload of EIP-712 typed data with a
// long array hashed the payload twice and built its policy view (then converted it again for
// the policy engine) in Prepare, policies or not: 1.5 s and +140 MB for 460,000 elements. The
// digest then parsed and hashed once, but decoded the message into Go values first: ~60 bytes
// of memory per byte of payload (55 MB for those 460,000 elements). It now hashes the
// payload's bytes as it reads them: the copy of the payload and a few bytes more per byte; the
// view waits for a policy that reads eth.
func TestSignTypedDataCost(t *testing.T) {
	k := &SigningKey{Kind: KindAccount, Curve: "CURVE_SECP256K1", AddressFormat: "ADDRESS_FORMAT_ETHEREUM"}
	payload := func(types, message string) []byte {
		return []byte(`{"types":{` + types + `},"primaryType":"P","domain":{"name":"x"},"message":` + message + `}`)
	}
	run := func(in []byte) {
		if _, _, err := k.digest("parameters.payload", string(in), "PAYLOAD_ENCODING_EIP712",
			"HASH_FUNCTION_NO_OP"); err != nil {
			t.Fatal(err)
		}
	}
	var fields, object strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&fields, `,{"name":"f%d","type":"uint64"}`, i)
		fmt.Fprintf(&object, `,"f%d":%d`, i, i)
	}
	costtest.Linear(t, 250,
		costtest.Shape{
			Name: "EIP-712 long array", // the uint256[] of 460,000 elements, at 25 KB and 100 KB
			Make: func(n int) []byte {
				return payload(`"P":[{"name":"a","type":"uint256[]"}]`, `{"a":[`+strings.Repeat("1,", 50*n)+`1]}`)
			},
			Run:     run,
			PerByte: 8, // the string's copy as bytes; the digest allocates nothing per value
		},
		costtest.Shape{
			Name: "EIP-712 array of strings",
			Make: func(n int) []byte {
				return payload(`"P":[{"name":"a","type":"string[]"}]`,
					`{"a":[`+strings.Repeat(`"ab\u00e9",`, 10*n)+`"x"]}`)
			},
			Run:     run,
			PerByte: 8,
		},
		costtest.Shape{
			Name: "EIP-712 objects with many fields",
			Make: func(n int) []byte {
				obj := `{` + object.String()[1:] + `}`
				return payload(`"P":[{"name":"a","type":"S[]"}],"S":[`+fields.String()[1:]+`]`,
					`{"a":[`+strings.Repeat(obj+`,`, n/20)+obj+`]}`)
			},
			Run:     run,
			PerByte: 8,
		},
	)
}
