package tron

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func varintField(num, v uint64) []byte { return appendVarint(appendVarint(nil, num<<3), v) }

// rawWith is a raw_data of one contract of type name (code) with param as its parameter,
// and extra appended to raw_data.
func rawWith(code uint64, name string, param, extra []byte) []byte {
	return cat(appendBytesField(nil, 1, []byte{1, 2}), appendBytesField(nil, 4, make([]byte, 8)),
		varintField(8, 1000), contractField(code, name, param), varintField(14, 900), extra)
}

// contractField is raw_data's field 11: one contract of type name (code).
func contractField(code uint64, name string, param []byte) []byte {
	anyMsg := cat(
		appendBytesField(nil, 1, []byte("type.googleapis.com/protocol."+name)),
		appendBytesField(nil, 2, param),
	)
	return appendBytesField(nil, 11, cat(varintField(1, code), appendBytesField(nil, 2, anyMsg)))
}

func transferParam() []byte {
	return cat(appendBytesField(nil, 1, tronOwner), appendBytesField(nil, 2, tronRecv), varintField(3, 5))
}

var (
	tronOwner, _ = hex.DecodeString("412c7536e3605d9c16a7a3d7b1898e529396a65c23")
	tronRecv, _  = hex.DecodeString("4177944d19c052b73ee2286823aa83f8138cb7032f")
)

func transfer(extra []byte) []byte { return rawWith(1, "TransferContract", transferParam(), extra) }

// permissions is an AccountPermissionUpdateContract with actives active permissions of keys
// keys each.
func permissions(actives, keys int) []byte {
	key := cat(appendBytesField(nil, 1, tronRecv), varintField(2, 1))
	perm := cat(varintField(1, 2), varintField(2, 2), appendBytesField(nil, 3, []byte("active")),
		varintField(4, 1), appendBytesField(nil, 6, make([]byte, 32)))
	for i := 0; i < keys; i++ {
		perm = append(perm, appendBytesField(nil, 7, key)...)
	}
	param := appendBytesField(nil, 1, tronOwner)
	for i := 0; i < actives; i++ {
		param = append(param, appendBytesField(nil, 4, perm)...)
	}
	return rawWith(46, "AccountPermissionUpdateContract", param, nil)
}

// TestParseRawCost feeds ParseRaw, the policy view and Sign the shapes of a raw_data that could
// cost more than its size: many unknown fields, many contracts, many permissions and keys, a
// long memo, lengths declared past the input, nesting in unknown fields.
func TestParseRawCost(t *testing.T) {
	v := loadVectors(t)
	sign := testSigner(t, v.PrivateKey)
	run := func(in []byte) {
		tx, err := ParseRaw(in)
		if err != nil {
			return
		}
		_ = tx.PolicyView()
		_, _ = tx.Sign(sign)
	}
	run(unhex(t, v.Transactions[0].RawDataHex)) // secp256k1's tables are built on first use
	costtest.Linear(t, 1000,
		costtest.Shape{
			Name: "many unknown fields",
			Make: func(n int) []byte { return transfer(bytes.Repeat(varintField(15, 0), 10*n)) },
			Run:  run,
		},
		costtest.Shape{
			Name: "many contracts",
			Make: func(n int) []byte {
				return transfer(bytes.Repeat(contractField(1, "TransferContract", transferParam()), n/4))
			},
			Run: run,
		},
		costtest.Shape{
			Name: "many keys in a permission",
			Make: func(n int) []byte { return permissions(1, n) },
			Run:  run,
		},
		costtest.Shape{
			Name: "many active permissions",
			Make: func(n int) []byte { return permissions(n/4, 4) },
			Run:  run,
		},
		costtest.Shape{
			Name: "long memo",
			Make: func(n int) []byte { return transfer(appendBytesField(nil, 10, bytes.Repeat([]byte{0xff}, 20*n))) },
			Run:  run,
		},
		costtest.Shape{
			Name: "nesting in an unknown field",
			Make: func(n int) []byte {
				inner := []byte{}
				for i := 0; i < 2*n; i++ {
					inner = appendBytesField(nil, 15, inner)
				}
				return transfer(inner)
			},
			Run: run,
		},
		costtest.Shape{
			Name: "over the size limit",
			Make: func(n int) []byte { return transfer(appendBytesField(nil, 10, make([]byte, 600*n))) },
			Run:  run,
		},
		costtest.Shape{
			Name: "a length declared past the input",
			Make: func(n int) []byte {
				return transfer(cat(appendVarint(nil, 15<<3|2), appendVarint(nil, 1<<40), make([]byte, 10*n)))
			},
			Run: run,
		},
	)
}

// TestParseRawSizeLimit: a raw_data of MaxRawDataSize bytes parses; one byte more is refused.
func TestParseRawSizeLimit(t *testing.T) {
	memo := func(n int) []byte { return transfer(appendBytesField(nil, 10, make([]byte, n))) }
	base := len(memo(MaxRawDataSize - 1000))
	at := memo(MaxRawDataSize - 1000 + MaxRawDataSize - base)
	if len(at) != MaxRawDataSize {
		t.Fatalf("built %d bytes", len(at))
	}
	if _, err := ParseRaw(at); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := ParseRaw(append(at, 0x78, 0)); err == nil || !strings.Contains(err.Error(), "at most 512000") {
		t.Fatalf("over the limit: %v", err)
	}
}
