package ethereum

import (
	"encoding/hex"
	"math/big"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

const erc20ABI = `[{"type":"function","name":"transfer","inputs":[{"name":"dst","type":"address"},{"name":"wad","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
{"type":"function","name":"approve","inputs":[{"name":"spender","type":"address"},{"name":"amount","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]}]`

func TestDecodeCall(t *testing.T) {
	// transfer(0x08d2b0a37F869FF76BACB5Bab3278E26ab7067B7, 1e18), encoded by hand per the ABI spec.
	data, _ := hex.DecodeString("a9059cbb" +
		"00000000000000000000000008d2b0a37f869ff76bacb5bab3278e26ab7067b7" +
		"0000000000000000000000000000000000000000000000000de0b6b3a7640000")
	c, err := DecodeCall([]byte(erc20ABI), data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "transfer" || c.Signature != "transfer(address,uint256)" {
		t.Fatalf("decoded %s / %s", c.Name, c.Signature)
	}
	if c.Args["dst"] != "0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7" ||
		c.Args["wad"].(*big.Int).String() != "1000000000000000000" {
		t.Fatalf("args %v", c.Args)
	}
	for _, bad := range [][]byte{nil, {1, 2}, {0xde, 0xad, 0xbe, 0xef}, data[:20]} {
		if _, err := DecodeCall([]byte(erc20ABI), bad); err == nil {
			t.Errorf("decoded %x", bad)
		}
	}
	if _, err := DecodeCall([]byte("not json"), data); err == nil {
		t.Error("bad ABI accepted")
	}
}

func FuzzDecodeCall(f *testing.F) {
	f.Add([]byte{0xa9, 0x05, 0x9c, 0xbb, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		costtest.Budget(t, data, decodeAllocPerByte, decodeAllocFixed, func() {
			_, _ = DecodeCall([]byte(erc20ABI), data)
		})
	})
}
