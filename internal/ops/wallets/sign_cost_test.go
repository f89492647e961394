package wallets

import (
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

// TestSignTypedDataCost is issue 23's item 5: a sign_raw_payload of EIP-712 typed data with a
// long array hashed the payload twice and built its policy view (then converted it again for
// the policy engine) in Prepare, policies or not: 1.5 s and +140 MB for 460,000 elements. The
// digest now parses and hashes once; the view waits for a policy that reads eth.
func TestSignTypedDataCost(t *testing.T) {
	k := &SigningKey{Kind: KindAccount, Curve: "CURVE_SECP256K1", AddressFormat: "ADDRESS_FORMAT_ETHEREUM"}
	costtest.Linear(t, 250, costtest.Shape{
		Name: "EIP-712 long array",
		Make: func(n int) []byte {
			return []byte(`{"types":{"P":[{"name":"a","type":"uint8[]"}]},"primaryType":"P",` +
				`"domain":{"name":"x"},"message":{"a":[` + strings.Repeat("1,", 100*n) + `1]}}`)
		},
		Run: func(in []byte) {
			if _, _, err := k.digest("parameters.payload", string(in), "PAYLOAD_ENCODING_EIP712",
				"HASH_FUNCTION_NO_OP"); err != nil {
				t.Fatal(err)
			}
		},
		PerByte: 80, // JSON decoding into Go values: under 70 bytes per byte of "1,"
	})
}
