package ethereum

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// Hyperliquid's typed data names its types "HyperliquidTransaction:ApproveAgent" (a colon):
// @turnkey/viem and @turnkey/ethers send them for signing, and viem and ethers hash them as
// written. The digests are viem's hashTypedData, checked against ethers' TypedDataEncoder
// (testdata/gen/hyperliquid.mjs).
func TestHyperliquidTypedData(t *testing.T) {
	b, err := os.ReadFile("testdata/hyperliquid.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name, Payload, Digest string
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			d, _, err := HashTypedData([]byte(c.Payload))
			if err != nil {
				t.Fatal(err)
			}
			if got := "0x" + hex.EncodeToString(d[:]); got != c.Digest {
				t.Fatalf("digest %s, viem %s", got, c.Digest)
			}
		})
	}
	// Names that would break encodeType are still refused.
	for _, bad := range []string{"Mail(x)", "A B", "T[]", "a,b"} {
		payload := `{"types":{"EIP712Domain":[],"` + bad + `":[{"name":"x","type":"uint256"}]},"primaryType":"` + bad + `","domain":{},"message":{"x":"1"}}`
		if _, _, err := HashTypedData([]byte(payload)); err == nil {
			t.Errorf("type name %q accepted", bad)
		}
	}
}
