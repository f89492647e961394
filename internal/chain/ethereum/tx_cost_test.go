package ethereum

import (
	"math/big"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/latchkey/latchkey/internal/costtest"
)

// unsignedTx is typ ‖ rlp(fields), or rlp(fields) for legacy (typ 0).
func unsignedTx(t testing.TB, typ byte, fields ...any) []byte {
	b, err := rlp.EncodeToBytes(fields)
	if err != nil {
		t.Fatal(err)
	}
	if typ == 0 {
		return b
	}
	return append([]byte{typ}, b...)
}

// TestParseUnsignedCost feeds ParseUnsigned, the policy view, the signing hash and Sign the
// shapes of an RLP transaction that could cost more than their size: long access lists, many
// storage keys, authorizations and blob hashes, long data, nesting where a value is expected,
// and lengths declared past the input.
func TestParseUnsignedCost(t *testing.T) {
	// go-ethereum keeps its encoding buffers in sync.Pools, which a collection empties: with
	// collections only where costtest makes them, the bytes a run allocates do not depend on
	// whether one happened in the middle of it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	v := loadVectors(t)
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
	to := common.HexToAddress("0x3535353535353535353535353535353535353535")
	one, gwei := big.NewInt(1), big.NewInt(1e9)
	dynamic := func(data []byte, al types.AccessList) []byte {
		return unsignedTx(t, types.DynamicFeeTxType, one, uint64(1), gwei, gwei, uint64(21000), to, one, data, al)
	}
	costtest.Linear(t, 1000,
		costtest.Shape{
			Name: "access list of many addresses",
			Make: func(n int) []byte {
				al := make(types.AccessList, n)
				for i := range al {
					al[i].Address = common.BigToAddress(big.NewInt(int64(i)))
					al[i].StorageKeys = []common.Hash{}
				}
				return dynamic(nil, al)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "access list of many storage keys",
			Make: func(n int) []byte {
				keys := make([]common.Hash, n/2)
				return dynamic(nil, types.AccessList{{Address: to, StorageKeys: keys}})
			},
			Run: run,
		},
		costtest.Shape{
			Name: "long data",
			Make: func(n int) []byte { return dynamic(make([]byte, 32*n), nil) },
			Run:  run,
		},
		costtest.Shape{
			Name: "many authorizations",
			Make: func(n int) []byte {
				auths := make([]types.SetCodeAuthorization, n)
				for i := range auths {
					auths[i] = types.SetCodeAuthorization{ChainID: *uint256.NewInt(1), Address: to, Nonce: uint64(i)}
				}
				return unsignedTx(t, types.SetCodeTxType, one, uint64(1), gwei, gwei, uint64(21000), to, one,
					[]byte{}, types.AccessList{}, auths)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "many blob hashes",
			Make: func(n int) []byte {
				return unsignedTx(t, types.BlobTxType, one, uint64(1), gwei, gwei, uint64(21000), to, one,
					[]byte{}, types.AccessList{}, gwei, make([]common.Hash, n))
			},
			Run: run,
		},
		costtest.Shape{
			Name: "nesting where a value is expected",
			Make: func(n int) []byte {
				var nested any = []any{}
				for i := 0; i < 4*n; i++ {
					nested = []any{nested}
				}
				return unsignedTx(t, types.DynamicFeeTxType, one, uint64(1), gwei, gwei, uint64(21000), to, one,
					[]byte{}, []any{[]any{to, nested}})
			},
			Run: run,
		},
		costtest.Shape{
			Name: "over the size limit", // refused before the RLP is read
			Make: func(n int) []byte { return dynamic(make([]byte, 160*n), nil) },
			Run:  run,
		},
		costtest.Shape{
			Name: "legacy with a length declared past the input",
			Make: func(n int) []byte {
				b := unsignedTx(t, 0, uint64(1), gwei, uint64(21000), to, one, make([]byte, 32*n), one,
					uint64(0), uint64(0))
				b[1], b[2], b[3], b[4] = 0xff, 0xff, 0xff, 0xff // a 4 GiB list
				return b
			},
			Run: run,
		},
	)
}

// TestParseUnsignedSizeLimit: a transaction of MaxTransactionSize bytes parses; one byte more
// is refused, naming the limit.
func TestParseUnsignedSizeLimit(t *testing.T) {
	to := common.HexToAddress("0x3535353535353535353535353535353535353535")
	one, gwei := big.NewInt(1), big.NewInt(1e9)
	build := func(data int) []byte {
		return unsignedTx(t, types.DynamicFeeTxType, one, uint64(1), gwei, gwei, uint64(21000), to, one,
			make([]byte, data), types.AccessList{})
	}
	at := build(MaxTransactionSize - (len(build(MaxTransactionSize-100)) - (MaxTransactionSize - 100)))
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
