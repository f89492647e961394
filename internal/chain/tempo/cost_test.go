package tempo

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/costtest"
)

// tempoTx encodes 0x76 ‖ rlp(f) with an empty fee payer and authorization list unless set.
func tempoTx(t testing.TB, f fields) []byte {
	if f.FeePayer == nil {
		f.FeePayer = rlp.RawValue{0x80}
	}
	if f.AuthorizationList == nil {
		f.AuthorizationList = rlp.RawValue{0xc0}
	}
	if f.MaxFeePerGas == nil {
		f.MaxFeePerGas, f.MaxPriorityFeePerGas, f.NonceKey = big.NewInt(2e9), big.NewInt(1), new(big.Int)
	}
	b, err := rlp.EncodeToBytes(&f)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{TxType}, b...)
}

func calls(n, input int) []Call {
	to := common.HexToAddress("0x70997970c51812dc3a010c7d01b50e0d17dc79c8")
	out := make([]Call, n)
	for i := range out {
		out[i] = Call{To: to[:], Value: big.NewInt(int64(i)), Data: make([]byte, input)}
	}
	return out
}

// TestParseUnsignedCost feeds ParseUnsigned, the policy view, the signing hash and Sign the
// shapes of a Tempo transaction that could cost more than its size: many calls, long inputs,
// a long access list, a long authorization list, many list items, a sponsored transaction
// (whose digest re-encodes the fields), and a transaction over the size limit.
func TestParseUnsignedCost(t *testing.T) {
	v := loadVectors(t, "tempo.json")
	sign := testSigner(t, v.PrivateKey)
	run := func(in []byte) {
		tx, err := ParseUnsigned(in)
		if err != nil {
			return
		}
		_ = tx.PolicyView("0x0000000000000000000000000000000000000001")
		_, _ = tx.Sign(sign)
	}
	run(unhex(t, v.Transactions[0].Unsigned)) // secp256k1's tables are built on first use
	shapes := []costtest.Shape{
		{
			Name: "many calls",
			Make: func(n int) []byte { return tempoTx(t, fields{ChainID: 1, Calls: calls(2*n, 4)}) },
			Run:  run,
		},
		{
			Name: "long call input",
			Make: func(n int) []byte { return tempoTx(t, fields{ChainID: 1, Calls: calls(1, 64*n)}) },
			Run:  run,
		},
		{
			Name: "long access list",
			Make: func(n int) []byte {
				al := make(types.AccessList, n)
				for i := range al {
					al[i].StorageKeys = make([]common.Hash, 1)
				}
				return tempoTx(t, fields{ChainID: 1, Calls: calls(1, 4), AccessList: al})
			},
			Run: run,
		},
		{
			Name: "long authorization list, sponsored",
			Make: func(n int) []byte {
				auth, _ := rlp.EncodeToBytes(make([][]byte, 16*n))
				return tempoTx(t, fields{ChainID: 1, Calls: calls(1, 4), FeePayer: rlp.RawValue{0x00},
					AuthorizationList: auth})
			},
			Run: run,
		},
		{
			Name: "many list items",
			Make: func(n int) []byte {
				items := base(-1, "")
				items = append(items, strings.Split(strings.Repeat("80,", 40*n), ",")...)
				return unhex(t, tempoHexLong(items...))
			},
			Run: run,
		},
		{
			Name: "over the size limit",
			Make: func(n int) []byte { return tempoTx(t, fields{ChainID: 1, Calls: calls(1, 400*n)}) },
			Run:  run,
		},
	}
	for _, s := range shapes[:4] { // the shapes within the limits are transactions
		if _, err := ParseUnsigned(s.Make(4 * 400)); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	costtest.Linear(t, 400, shapes...)
}

// tempoHexLong joins RLP items into 0x76 ‖ list, for any length.
func tempoHexLong(items ...string) string {
	content := strings.Join(items, "")
	n := len(content) / 2
	if n < 56 {
		return "76" + hex.EncodeToString([]byte{0xc0 + byte(n)}) + content
	}
	var size []byte
	for x := n; x > 0; x >>= 8 {
		size = append([]byte{byte(x)}, size...)
	}
	return "76" + hex.EncodeToString(append([]byte{0xf7 + byte(len(size))}, size...)) + content
}

// TestParseUnsignedSizeLimit: a transaction of MaxTransactionSize bytes parses; a byte more is
// refused, naming the limit.
func TestParseUnsignedSizeLimit(t *testing.T) {
	build := func(input int) []byte { return tempoTx(t, fields{ChainID: 1, Calls: calls(1, input)}) }
	at := build(MaxTransactionSize - (len(build(MaxTransactionSize-200)) - (MaxTransactionSize - 200)))
	if len(at) != MaxTransactionSize {
		t.Fatalf("built %d bytes", len(at))
	}
	if _, err := ParseUnsigned(at); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	over := build(MaxTransactionSize - (len(at) - MaxTransactionSize) + 1)
	if _, err := ParseUnsigned(over); err == nil || !strings.Contains(err.Error(), "at most 131072") {
		t.Fatalf("%d bytes: err = %v", len(over), err)
	}
}
